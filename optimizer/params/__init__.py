"""The parameter vocabulary: variants, NTT-friendly primes, the validated `Parameters` (made
from a plain literal in one place), message sizes and the CI-sized twin."""

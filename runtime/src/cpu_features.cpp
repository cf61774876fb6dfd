// Placeholder translation unit; the ring-arithmetic issue replaces it.
namespace spiralpir {
int runtime_abi_version() { return 1; }
}  // namespace spiralpir

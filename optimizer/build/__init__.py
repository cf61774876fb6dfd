"""Building generated instances: the CMake driver (runtime install, then the build)."""

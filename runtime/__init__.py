"""The C++ runtime's sources, shipped as package data (spiralpir.runtime) so that an installed
spiralpir can build generated instances; this file only makes the directory a package."""

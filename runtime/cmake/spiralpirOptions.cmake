# Build settings shared by the repository build (../../CMakeLists.txt) and the runtime built on
# its own (runtime/ as the top-level project, as an installed spiralpir builds it): C++ standard,
# options and warning flags.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

option(SPIRALPIR_WERROR "Treat warnings as errors" OFF)
option(SPIRALPIR_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(SPIRALPIR_OPTIMIZE_RUNTIME
  "Compile the runtime library (the kernels) at -O2 in any build type: a Debug sanitizer build then runs its tests at kernel speed, still instrumented and range-checked" OFF)
option(SPIRALPIR_ENABLE_AVX512 "Compile the AVX-512 kernels (still checked against the CPU at run time)" ON)
option(SPIRALPIR_ENABLE_AVX2 "Compile the AVX2 kernels (still checked against the CPU at run time)" ON)

add_compile_options(-Wall -Wextra)
if(SPIRALPIR_WERROR)
  add_compile_options(-Werror)
endif()
if(SPIRALPIR_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
endif()

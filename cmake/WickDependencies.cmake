# What wick links: the CPU GEMM library (WICK_CPU_BLAS, below), OpenMP, and, when nvcc is found, CUDA's libraries.
# Everything lands on one interface target, wick_deps, linked privately by the library.
add_library(wick_deps INTERFACE)

find_package(OpenMP REQUIRED COMPONENTS CXX)
target_link_libraries(wick_deps INTERFACE OpenMP::OpenMP_CXX)

# zlib reads the gzip'd IDX files of Fashion-MNIST (src/data).
find_package(ZLIB REQUIRED)
target_link_libraries(wick_deps INTERFACE ZLIB::ZLIB)

# The CPU GEMM (src/cpu/gemm.cpp), chosen by measurement (docs/design.md, "CPU GEMM"):
#   dnnl              oneDNN's dnnl_sgemm for float32 (libdnnl-dev), OpenBLAS's OpenMP build for
#                     float64; the default
#   openblas-openmp   OpenBLAS, OpenMP build (libopenblas-openmp-dev)
#   openblas-pthread  OpenBLAS, pthread build (libopenblas-pthread-dev)
#   blis              BLIS, OpenMP build (libblis-openmp-dev)
# Each library's folder can be given instead of searched: -DWICK_OPENBLAS=/path/libopenblas.so
# -DWICK_CBLAS_INCLUDE=/dir, -DWICK_DNNL=/path/libdnnl.so -DWICK_DNNL_INCLUDE=/dir,
# -DWICK_BLIS=/path/libblis.so -DWICK_BLIS_INCLUDE=/dir.
set(WICK_CPU_BLAS "dnnl" CACHE STRING "CPU GEMM library: dnnl, openblas-openmp, openblas-pthread or blis")
set_property(CACHE WICK_CPU_BLAS PROPERTY STRINGS dnnl openblas-openmp openblas-pthread blis)
set(_wick_gemm_source ${PROJECT_SOURCE_DIR}/src/cpu/gemm.cpp)
set(_wick_multiarch x86_64-linux-gnu aarch64-linux-gnu)
if(WICK_CPU_BLAS STREQUAL "dnnl" OR WICK_CPU_BLAS STREQUAL "openblas-openmp" OR WICK_CPU_BLAS STREQUAL "openblas-pthread")
  # Debian installs each OpenBLAS build in its own folder; dnnl takes float64 from the OpenMP one.
  set(_wick_openblas openblas-openmp)
  if(WICK_CPU_BLAS STREQUAL "openblas-pthread")
    set(_wick_openblas openblas-pthread)
  endif()
  list(TRANSFORM _wick_multiarch PREPEND /usr/include/ OUTPUT_VARIABLE _wick_inc)
  list(TRANSFORM _wick_inc APPEND /${_wick_openblas})
  list(TRANSFORM _wick_multiarch PREPEND /usr/lib/ OUTPUT_VARIABLE _wick_lib)
  list(TRANSFORM _wick_lib APPEND /${_wick_openblas})
  # The build's own folder first: /usr/lib/<arch>/libopenblas.so is an alternatives link to
  # whichever build was installed last (and so is the libopenblas.so.0 the loader would find);
  # the folder, linked by full path, also lands in the library's RUNPATH.
  find_path(WICK_CBLAS_INCLUDE cblas.h PATHS ${_wick_inc} /usr/include/openblas /usr/include NO_DEFAULT_PATH)
  find_library(WICK_OPENBLAS NAMES openblas PATHS ${_wick_lib} NO_DEFAULT_PATH)
  find_library(WICK_OPENBLAS NAMES openblas)
  if(NOT WICK_CBLAS_INCLUDE OR NOT WICK_OPENBLAS)
    message(FATAL_ERROR "OpenBLAS not found: install it with `apt-get install lib${_wick_openblas}-dev` "
                        "(scripts/setup.sh does), or pass -DWICK_OPENBLAS=/path/libopenblas.so -DWICK_CBLAS_INCLUDE=/dir")
  endif()
  target_include_directories(wick_deps INTERFACE ${WICK_CBLAS_INCLUDE})
  target_link_libraries(wick_deps INTERFACE ${WICK_OPENBLAS})
  message(STATUS "wick: OpenBLAS ${WICK_OPENBLAS}")
  if(WICK_CPU_BLAS STREQUAL "openblas-pthread")
    set_property(SOURCE ${_wick_gemm_source} APPEND PROPERTY COMPILE_DEFINITIONS WICK_CPU_BLAS_OPENBLAS_PTHREAD=1)
  endif()
endif()
if(WICK_CPU_BLAS STREQUAL "dnnl")
  find_path(WICK_DNNL_INCLUDE oneapi/dnnl/dnnl.h)
  find_library(WICK_DNNL NAMES dnnl)
  if(NOT WICK_DNNL_INCLUDE OR NOT WICK_DNNL)
    message(FATAL_ERROR "oneDNN not found: install it with `apt-get install libdnnl-dev` (scripts/setup.sh does), "
                        "pass -DWICK_DNNL=/path/libdnnl.so -DWICK_DNNL_INCLUDE=/dir, or choose another "
                        "-DWICK_CPU_BLAS (openblas-openmp, openblas-pthread, blis)")
  endif()
  target_include_directories(wick_deps INTERFACE ${WICK_DNNL_INCLUDE})
  target_link_libraries(wick_deps INTERFACE ${WICK_DNNL})
  set_property(SOURCE ${_wick_gemm_source} ${PROJECT_SOURCE_DIR}/src/cpu/dnnl_conv.cpp APPEND PROPERTY
               COMPILE_DEFINITIONS WICK_CPU_BLAS_DNNL=1)
  message(STATUS "wick: oneDNN ${WICK_DNNL} (float32 GEMM)")
elseif(WICK_CPU_BLAS STREQUAL "blis")
  list(TRANSFORM _wick_multiarch PREPEND /usr/include/ OUTPUT_VARIABLE _wick_inc)
  list(TRANSFORM _wick_inc APPEND /blis-openmp)
  list(TRANSFORM _wick_multiarch PREPEND /usr/lib/ OUTPUT_VARIABLE _wick_lib)
  list(TRANSFORM _wick_lib APPEND /blis-openmp)
  find_path(WICK_BLIS_INCLUDE blis.h PATHS ${_wick_inc} /usr/include/blis NO_DEFAULT_PATH)
  find_library(WICK_BLIS NAMES blis PATHS ${_wick_lib} NO_DEFAULT_PATH)
  if(NOT WICK_BLIS_INCLUDE OR NOT WICK_BLIS)
    message(FATAL_ERROR "BLIS (OpenMP build) not found: install it with `apt-get install libblis-openmp-dev`, "
                        "or pass -DWICK_BLIS=/path/libblis.so -DWICK_BLIS_INCLUDE=/dir")
  endif()
  target_include_directories(wick_deps SYSTEM INTERFACE ${WICK_BLIS_INCLUDE})  # blis.h trips -Wextra
  target_link_libraries(wick_deps INTERFACE ${WICK_BLIS})
  set_property(SOURCE ${_wick_gemm_source} APPEND PROPERTY COMPILE_DEFINITIONS WICK_CPU_BLAS_BLIS=1)
  message(STATUS "wick: BLIS ${WICK_BLIS}")
elseif(NOT WICK_CPU_BLAS MATCHES "^openblas-(openmp|pthread)$")
  message(FATAL_ERROR "WICK_CPU_BLAS=${WICK_CPU_BLAS}: choose dnnl, openblas-openmp, openblas-pthread or blis")
endif()

# Open MPI runs the "mpi" process group (src/distributed) through MPI's C API; without it
# init_process_group("mpi") raises NotImplementedError. Only src/distributed's sources see
# mpi.h and WICK_HAVE_MPI (CMakeLists.txt), so the rest of the library builds the same either way.
set(WICK_HAVE_MPI OFF)
include(CheckLanguage)
check_language(C)
if(CMAKE_C_COMPILER)
  enable_language(C)
  find_package(MPI COMPONENTS C)
endif()
if(MPI_C_FOUND)
  set(WICK_HAVE_MPI ON)
  message(STATUS "wick: MPI ${MPI_C_VERSION} (${MPIEXEC_EXECUTABLE})")
else()
  message(STATUS "wick: MPI not found; the mpi process group is not built")
endif()

# Gloo runs the "gloo" process group (src/distributed/gloo_process_group.cpp): CPU collectives
# over TCP, no MPI needed. Found through the CMake package Debian's libgloo-dev installs (which
# scripts/setup.sh installs); without it init_process_group("gloo") raises NotImplementedError.
# Only src/distributed's sources see Gloo's headers and WICK_HAVE_GLOO (CMakeLists.txt), and the
# library links it privately.
set(WICK_HAVE_GLOO OFF)
find_package(Gloo CONFIG QUIET)
if(Gloo_FOUND AND TARGET gloo)
  set(WICK_HAVE_GLOO ON)
  message(STATUS "wick: Gloo ${GLOO_VERSION}")
else()
  message(STATUS "wick: Gloo not found (apt-get install libgloo-dev); the gloo process group is not built")
endif()

# SentencePiece trains and runs the text tokenizer (src/text/tokenizer.cpp, wick::text::Tokenizer):
# pkg-config's sentencepiece (libsentencepiece-dev, which scripts/setup.sh installs). Without it
# the Tokenizer throws NotImplementedError; only that source sees its headers
# and WICK_HAVE_SENTENCEPIECE (CMakeLists.txt), and the library links it privately.
set(WICK_HAVE_SENTENCEPIECE OFF)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(WICK_SENTENCEPIECE QUIET sentencepiece)
endif()
if(WICK_SENTENCEPIECE_FOUND)
  set(WICK_HAVE_SENTENCEPIECE ON)
  message(STATUS "wick: SentencePiece ${WICK_SENTENCEPIECE_VERSION}")
else()
  message(STATUS "wick: SentencePiece not found (apt-get install libsentencepiece-dev); wick::text::Tokenizer "
                 "throws NotImplementedError")
endif()

# CUDA is optional: AUTO builds it when nvcc is found.
set(WICK_HAVE_CUDA OFF)
set(WICK_HAVE_CUDNN OFF)
set(WICK_HAVE_NCCL OFF)
if(NOT WICK_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # CMake 3.25 knows no C++20 flag for nvcc (it reports "requires the language dialect CUDA20").
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit REQUIRED)
    find_library(WICK_CUDNN cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(WICK_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(WICK_NCCL nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    target_link_libraries(wick_deps INTERFACE CUDA::cudart CUDA::cublas CUDA::cublasLt ${CMAKE_DL_LIBS})
    # cuDNN (header and library) builds Conv2d's cuDNN backend (src/cuda/cudnn_conv.cpp, under
    # WICK_HAVE_CUDNN, a definition for wick's own sources only); without it Conv2d runs its
    # generic backend on CUDA too.
    if(WICK_CUDNN AND WICK_CUDNN_INCLUDE)
      target_include_directories(wick_deps INTERFACE ${WICK_CUDNN_INCLUDE})
      target_link_libraries(wick_deps INTERFACE ${WICK_CUDNN})
      target_compile_definitions(wick_deps INTERFACE WICK_HAVE_CUDNN=1)
      set(WICK_HAVE_CUDNN ON)
      message(STATUS "wick: cuDNN ${WICK_CUDNN}")
    else()
      message(STATUS "wick: cuDNN not found; Conv2d on CUDA uses the generic (im2col + GEMM) backend")
    endif()
    # NCCL (library and header) runs wick::cuda::comm's collectives (WICK_HAVE_NCCL, for wick's
    # own sources); without it they are peer copies.
    find_path(WICK_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(WICK_NCCL AND WICK_NCCL_INCLUDE)
      target_include_directories(wick_deps INTERFACE ${WICK_NCCL_INCLUDE})
      target_link_libraries(wick_deps INTERFACE ${WICK_NCCL})
      target_compile_definitions(wick_deps INTERFACE WICK_HAVE_NCCL=1)
      set(WICK_HAVE_NCCL ON)
      message(STATUS "wick: NCCL ${WICK_NCCL}")
    else()
      message(STATUS "wick: NCCL not found; cuda::comm uses peer copies")
    endif()
    set(WICK_HAVE_CUDA ON)
    message(STATUS "wick: CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(WICK_CUDA STREQUAL "ON")
    message(FATAL_ERROR "WICK_CUDA=ON but no CUDA compiler was found")
  else()
    message(STATUS "wick: no CUDA compiler found; building for the CPU only")
  endif()
endif()

# Warnings as errors in wick's own code.
function(wick_warnings target)
  if(WICK_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-unused-parameter>)
    # GCC 13's -O3 flow analysis reports copies between std::vector and fixed arrays inlined
    # from the standard library as out of bounds (false positives); keep them as warnings.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 13)
      target_compile_options(${target} PRIVATE
        $<$<COMPILE_LANGUAGE:CXX>:-Wno-error=array-bounds -Wno-error=stringop-overflow>)
    endif()
  else()
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  endif()
endfunction()

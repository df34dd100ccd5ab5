// The main() of a standalone program compiled for CUDA: no Python. fluid_native_main.h's
// readers take the parameters and feeds into host memory, each variable gets a device
// buffer (the inputs copied in, the rest zeroed, as the C++ program's are), fluid_run runs
// on the device pointers with a cuBLAS handle of the program's own, and the fetched
// variables come back to be written as .npy.
//
//   ./model PARAMS FEED.npy... OUT_DIR
//
// cuBLAS is opened at run time (dlopen of libcublas.so.<13|12|11>, found through the
// binary's rpath or LD_LIBRARY_PATH), so the program builds with nvcc alone, cuBLAS's
// headers and library not needed until it runs; its four entry points are declared here
// by their C ABI (status and operation enums are ints, the handle a pointer).
//
// Exit status: 2 for bad input (as the C++ program), 3 when CUDA or cuBLAS fails (no
// device, no cuBLAS, out of memory, a failed launch), the error named on stderr.
#pragma once

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <string>
#include <type_traits>
#include <vector>

#include "fluid_native_cuda.cuh"
#include "fluid_native_main.h"

namespace fluid_native {

inline void device_fail(const std::string& what) {
  fprintf(stderr, "fluid_nb compiled program: %s\n", what.c_str());
  exit(3);
}

inline void check_cuda(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess)
    device_fail("CUDA failed in " + what + ": " + cudaGetErrorName(status) + " (" +
                cudaGetErrorString(status) + ")");
}

// cuBLAS's entry points, from the library dlopen found
struct Cublas {
  int (*create)(void** handle);
  int (*destroy)(void* handle);
  cublas_sgemm_fn sgemm;
  cublas_dgemm_fn dgemm;
  const char* (*status_string)(int status);
};

inline Cublas& cublas() {
  static Cublas library = {};
  return library;
}

inline void open_cublas() {
  const char* names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11",
                         "libcublas.so"};
  void* handle = nullptr;
  std::string errors;
  for (const char* name : names) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    errors += std::string("; ") + dlerror();
  }
  if (handle == nullptr)
    device_fail("cuBLAS expected (libcublas.so.13, .12, .11 or libcublas.so on the "
                "binary's rpath or LD_LIBRARY_PATH), but none opened" + errors);
  auto symbol = [handle](const char* name) {
    void* found = dlsym(handle, name);
    if (found == nullptr) device_fail(std::string("cuBLAS has no ") + name);
    return found;
  };
  Cublas& library = cublas();
  library.create = reinterpret_cast<int (*)(void**)>(symbol("cublasCreate_v2"));
  library.destroy = reinterpret_cast<int (*)(void*)>(symbol("cublasDestroy_v2"));
  library.sgemm = reinterpret_cast<cublas_sgemm_fn>(symbol("cublasSgemm_v2"));
  library.dgemm = reinterpret_cast<cublas_dgemm_fn>(symbol("cublasDgemm_v2"));
  library.status_string =
      reinterpret_cast<const char* (*)(int)>(symbol("cublasGetStatusString"));
}

inline void check_cublas(int status, const char* what) {
  if (status != 0)  // CUBLAS_STATUS_SUCCESS
    device_fail(std::string("cuBLAS failed in ") + what + ": status " +
                std::to_string(status) + " (" + cublas().status_string(status) + ")");
}

// cuBLAS's gemm behind the runtime's pointer types, whose callers do not read the status:
// a failure ends the program here (T: float for cublasSgemm, double for cublasDgemm)
template <typename T>
int cublas_gemm_checked(void* handle, int trans_a, int trans_b, int m, int n, int k,
                        const T* alpha, const T* a, int lda, const T* b, int ldb,
                        const T* beta, T* c, int ldc) {
  constexpr bool single = std::is_same<T, float>::value;
  int status;
  if constexpr (single)
    status = cublas().sgemm(handle, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                            ldc);
  else
    status = cublas().dgemm(handle, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
                            ldc);
  check_cublas(status, single ? "cublasSgemm" : "cublasDgemm");
  return 0;
}

inline int standalone_cuda_main(int argc, char** argv, const VarInfo* vars, int count,
                                const int* params, int param_count, const int* fetches,
                                int fetch_count, void (*run)(void**)) {
  if (!check_usage(argc, argv, vars, count)) return 2;
  // every input is read and checked before the device is touched
  std::vector<void*> host = read_inputs(argv, vars, count, params, param_count);
  std::vector<void*> device(count, nullptr);
  for (int i = 0; i < count; ++i) {
    const size_t bytes = (numel(vars[i]) > 0 ? numel(vars[i]) : 1) * vars[i].itemsize;
    const std::string name = std::string("the buffer of ") + vars[i].name;
    check_cuda(cudaMalloc(&device[i], bytes), "cudaMalloc of " + name);
    if (vars[i].role == kFeed || vars[i].role == kPersistable)
      check_cuda(cudaMemcpy(device[i], host[i], bytes, cudaMemcpyHostToDevice),
                 "the copy of " + name + " to the device");
    else
      check_cuda(cudaMemset(device[i], 0, bytes), "cudaMemset of " + name);
  }
  open_cublas();
  void* handle = nullptr;
  check_cublas(cublas().create(&handle), "cublasCreate");
  fluid_cublas_handle = handle;
  fluid_cublas_sgemm = &cublas_gemm_checked<float>;
  fluid_cublas_dgemm = &cublas_gemm_checked<double>;
  run(device.data());
  check_cuda(cudaGetLastError(), "a kernel launch of fluid_run");
  check_cuda(cudaDeviceSynchronize(), "fluid_run");
  for (int k = 0; k < fetch_count; ++k) {
    const int i = fetches[k];
    check_cuda(cudaMemcpy(host[i], device[i], numel(vars[i]) * vars[i].itemsize,
                          cudaMemcpyDeviceToHost),
               std::string("the copy of ") + vars[i].name + " from the device");
  }
  write_fetches(argv[argc - 1], vars, fetches, fetch_count, host);
  check_cublas(cublas().destroy(handle), "cublasDestroy");
  for (void* p : device) cudaFree(p);
  for (void* p : host) free(p);
  return 0;
}

}  // namespace fluid_native

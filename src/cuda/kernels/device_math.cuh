/* Math on the device, float and double overloads: the one set that every CUDA kernel calls
 * (unary, softmax, reductions). CUDA's accurate libm calls (expf, erff, ...: at most 2 ulp),
 * never the fast intrinsics, so results stay within the tests' float64 tolerances.
 */
#pragma once

#include <cuda_runtime.h>

namespace wick::detail::gpu {

__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return ::exp(x); }
__device__ __forceinline__ float m_expm1(float x) { return expm1f(x); }
__device__ __forceinline__ double m_expm1(double x) { return ::expm1(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log1p(double x) { return ::log1p(x); }
__device__ __forceinline__ float m_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double m_log(double x) { return ::log(x); }
__device__ __forceinline__ float m_log2(float x) { return log2f(x); }
__device__ __forceinline__ double m_log2(double x) { return ::log2(x); }
__device__ __forceinline__ float m_log10(float x) { return log10f(x); }
__device__ __forceinline__ double m_log10(double x) { return ::log10(x); }
__device__ __forceinline__ float m_floor(float x) { return floorf(x); }
__device__ __forceinline__ double m_floor(double x) { return ::floor(x); }
__device__ __forceinline__ float m_ceil(float x) { return ceilf(x); }
__device__ __forceinline__ double m_ceil(double x) { return ::ceil(x); }
__device__ __forceinline__ float m_trunc(float x) { return truncf(x); }
__device__ __forceinline__ double m_trunc(double x) { return ::trunc(x); }
__device__ __forceinline__ float m_rint(float x) { return rintf(x); }  // half to even
__device__ __forceinline__ double m_rint(double x) { return ::rint(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return ::sqrt(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return ::sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return ::cos(x); }
__device__ __forceinline__ float m_tan(float x) { return tanf(x); }
__device__ __forceinline__ double m_tan(double x) { return ::tan(x); }
__device__ __forceinline__ float m_asin(float x) { return asinf(x); }
__device__ __forceinline__ double m_asin(double x) { return ::asin(x); }
__device__ __forceinline__ float m_acos(float x) { return acosf(x); }
__device__ __forceinline__ double m_acos(double x) { return ::acos(x); }
__device__ __forceinline__ float m_atan(float x) { return atanf(x); }
__device__ __forceinline__ double m_atan(double x) { return ::atan(x); }
__device__ __forceinline__ float m_sinh(float x) { return sinhf(x); }
__device__ __forceinline__ double m_sinh(double x) { return ::sinh(x); }
__device__ __forceinline__ float m_cosh(float x) { return coshf(x); }
__device__ __forceinline__ double m_cosh(double x) { return ::cosh(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return ::tanh(x); }
__device__ __forceinline__ float m_erfinv(float x) { return erfinvf(x); }
__device__ __forceinline__ double m_erfinv(double x) { return ::erfinv(x); }
__device__ __forceinline__ float m_asinh(float x) { return asinhf(x); }
__device__ __forceinline__ double m_asinh(double x) { return ::asinh(x); }
__device__ __forceinline__ float m_acosh(float x) { return acoshf(x); }
__device__ __forceinline__ double m_acosh(double x) { return ::acosh(x); }
__device__ __forceinline__ float m_atanh(float x) { return atanhf(x); }
__device__ __forceinline__ double m_atanh(double x) { return ::atanh(x); }
__device__ __forceinline__ float m_atan2(float y, float x) { return atan2f(y, x); }
__device__ __forceinline__ double m_atan2(double y, double x) { return ::atan2(y, x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return ::erf(x); }
__device__ __forceinline__ float m_pow(float x, float e) { return powf(x, e); }
__device__ __forceinline__ double m_pow(double x, double e) { return ::pow(x, e); }
__device__ __forceinline__ float m_fmod(float x, float e) { return fmodf(x, e); }
__device__ __forceinline__ double m_fmod(double x, double e) { return ::fmod(x, e); }
__device__ __forceinline__ float m_lgamma(float x) { return lgammaf(x); }  // +inf at the poles
__device__ __forceinline__ double m_lgamma(double x) { return ::lgamma(x); }

}  // namespace wick::detail::gpu

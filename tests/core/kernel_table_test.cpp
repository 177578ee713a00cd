// The kernel table's one accessor: it hands back the entry a backend filled, and an entry left
// null makes the call throw NotImplementedError "[op] not implemented on <device>" rather than
// crash, for every family alike.
#include "core/kernel_table.h"

#include <string>

#include <gtest/gtest.h>

#include "cpu/kernels.h"
#include "wick/wick.h"

namespace wick::detail {
namespace {

template <auto Entry>
std::string error_of_missing(const KernelTable& table, Device device, const char* op) {
  try {
    kernel<Entry>(table, device, op);
  } catch (const NotImplementedError& e) {
    return e.what();
  }
  return "";
}

void fill_nothing(const TensorIter&, const Scalar&) {}

TEST(KernelTable, NullEntryThrowsNotImplemented) {
  const KernelTable none{};  // a backend that fills nothing
  EXPECT_EQ(error_of_missing<&KernelTable::unary>(none, Device(kCUDA, 0), "exp"),
            "[exp] not implemented on cuda");
  EXPECT_EQ(error_of_missing<&KernelTable::fill>(none, Device(kCPU), "fill_"),
            "[fill_] not implemented on cpu");
  EXPECT_EQ(error_of_missing<&KernelTable::gemm>(none, Device(kCPU), "matmul"),
            "[matmul] not implemented on cpu");
  EXPECT_EQ(error_of_missing<&KernelTable::conv2d_forward>(none, Device(kCUDA, 1), "conv2d"),
            "[conv2d] not implemented on cuda");
  EXPECT_EQ(error_of_missing<&KernelTable::conv2d_backward>(none, Device(kCPU), "conv2d_backward"),
            "[conv2d_backward] not implemented on cpu");
}

TEST(KernelTable, FilledEntryIsReturned) {
  KernelTable some{};
  some.fill = &fill_nothing;
  EXPECT_EQ(kernel<&KernelTable::fill>(some, Device(kCPU), "fill_"), &fill_nothing);
  EXPECT_EQ(error_of_missing<&KernelTable::copy>(some, Device(kCPU), "copy_"),
            "[copy_] not implemented on cpu");
  // The CPU table fills convolution with its own kernel (which hands the dtypes BLAS lacks to the
  // generic implementation).
  EXPECT_EQ(kernel<&KernelTable::conv2d_forward>(Device(kCPU), "conv2d"), &cpu::conv2d_forward);
  EXPECT_EQ(kernel<&KernelTable::conv2d_backward>(Device(kCPU), "conv2d"), &cpu::conv2d_backward);
  // And max pooling (its other dtypes go to core's generic windows, as an empty entry's do).
  EXPECT_EQ(kernel<&KernelTable::max_pool2d_forward>(Device(kCPU), "max_pool2d"),
            &cpu::max_pool2d_forward);
  EXPECT_EQ(kernel<&KernelTable::max_pool2d_backward>(Device(kCPU), "max_pool2d"),
            &cpu::max_pool2d_backward);
}

}  // namespace
}  // namespace wick::detail

// Cube: y = x^3, elementwise. One input, one output; the gradient is
// registered in Python (examples/custom_ops/ops.py).
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/shape_inference.h"

using namespace tensorflow;

REGISTER_OP("Cube")
    .Attr("T: {half, float, double}")
    .Input("x: T")
    .Output("y: T")
    .SetShapeFn(shape_inference::UnchangedShape);

template <typename T>
class CubeOp : public OpKernel {
 public:
  explicit CubeOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, x.shape(), &y));
    auto in = x.flat<T>();
    auto out = y->flat<T>();
    for (int64_t i = 0; i < in.size(); ++i) out(i) = in(i) * in(i) * in(i);
  }
};

#define REGISTER(T) \
  REGISTER_KERNEL_BUILDER(Name("Cube").Device(DEVICE_CPU).TypeConstraint<T>("T"), CubeOp<T>);
REGISTER(Eigen::half)
REGISTER(float)
REGISTER(double)
#undef REGISTER

// Same forward, registered without any gradient: tf.no_gradient marks the
// first, the second has none at all.
REGISTER_OP("CubeNoGradient")
    .Attr("T: {float, double}")
    .Input("x: T")
    .Output("y: T")
    .SetShapeFn(shape_inference::UnchangedShape);
REGISTER_OP("CubeWithoutGradient")
    .Attr("T: {float, double}")
    .Input("x: T")
    .Output("y: T")
    .SetShapeFn(shape_inference::UnchangedShape);

#define REGISTER(NAME, T) \
  REGISTER_KERNEL_BUILDER(Name(NAME).Device(DEVICE_CPU).TypeConstraint<T>("T"), CubeOp<T>);
REGISTER("CubeNoGradient", float)
REGISTER("CubeNoGradient", double)
REGISTER("CubeWithoutGradient", float)
REGISTER("CubeWithoutGradient", double)
#undef REGISTER

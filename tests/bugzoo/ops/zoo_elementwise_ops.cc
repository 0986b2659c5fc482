// Elementwise ops for the bug zoo (tests/bugzoo). Each forward kernel is right;
// the gradients are registered in Python (tests/bugzoo/zoo_ops.py), several of
// them wrong on purpose. One kernel serves several op names, so that each
// wrong gradient can be registered directly under an op's own name.
//
//   ZooCube*:      y = x^3                    (half, float, double)
//   ZooLeakyRelu*: y = x >= 0 ? x : 0.2 x     (float, double)
//   ZooMul*:       z = x * y, same shapes     (float, double)
//   ZooScale*:     y = a * x, a a scalar      (float, double)
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

using namespace tensorflow;

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

template <typename T>
class LeakyReluOp : public OpKernel {
 public:
  explicit LeakyReluOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, x.shape(), &y));
    auto in = x.flat<T>();
    auto out = y->flat<T>();
    for (int64_t i = 0; i < in.size(); ++i) out(i) = in(i) >= T(0) ? in(i) : T(0.2) * in(i);
  }
};

template <typename T>
class MulOp : public OpKernel {
 public:
  explicit MulOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& y = context->input(1);
    OP_REQUIRES(context, x.shape() == y.shape(),
                errors::InvalidArgument("ZooMul needs equal shapes, got ", x.shape().DebugString(),
                                        " and ", y.shape().DebugString()));
    Tensor* z = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, x.shape(), &z));
    auto a = x.flat<T>();
    auto b = y.flat<T>();
    auto out = z->flat<T>();
    for (int64_t i = 0; i < a.size(); ++i) out(i) = a(i) * b(i);
  }
};

template <typename T>
class ScaleOp : public OpKernel {
 public:
  explicit ScaleOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& a = context->input(1);
    OP_REQUIRES(context, TensorShapeUtils::IsScalar(a.shape()),
                errors::InvalidArgument("ZooScale needs a scalar a, got ", a.shape().DebugString()));
    Tensor* y = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, x.shape(), &y));
    const T scale = a.scalar<T>()();
    auto in = x.flat<T>();
    auto out = y->flat<T>();
    for (int64_t i = 0; i < in.size(); ++i) out(i) = scale * in(i);
  }
};

#define UNARY_OP(NAME, TYPES)                     \
  REGISTER_OP(NAME)                               \
      .Attr("T: {" TYPES "}")                     \
      .Input("x: T")                              \
      .Output("y: T")                             \
      .SetShapeFn(shape_inference::UnchangedShape);

#define KERNEL(NAME, KERNEL_CLASS, T) \
  REGISTER_KERNEL_BUILDER(Name(NAME).Device(DEVICE_CPU).TypeConstraint<T>("T"), KERNEL_CLASS<T>);

#define CUBE(NAME)                    \
  UNARY_OP(NAME, "half, float, double") \
  KERNEL(NAME, CubeOp, Eigen::half)   \
  KERNEL(NAME, CubeOp, float)         \
  KERNEL(NAME, CubeOp, double)

CUBE("ZooCube")
CUBE("ZooCubeNegated")
CUBE("ZooCubeIgnoresUpstream")
CUBE("ZooCubeHalfInt8")
CUBE("ZooCubeEagerFastPath")
CUBE("ZooCubeStochasticRounding")
CUBE("ZooCubeStopGradient")

#define LEAKY_RELU(NAME)              \
  UNARY_OP(NAME, "float, double")     \
  KERNEL(NAME, LeakyReluOp, float)    \
  KERNEL(NAME, LeakyReluOp, double)

LEAKY_RELU("ZooLeakyRelu")
LEAKY_RELU("ZooLeakyReluWrongNegativeSlope")

#define MUL(NAME)                                       \
  REGISTER_OP(NAME)                                     \
      .Attr("T: {float, double}")                       \
      .Input("x: T")                                    \
      .Input("y: T")                                    \
      .Output("z: T")                                   \
      .SetShapeFn(shape_inference::UnchangedShape);     \
  KERNEL(NAME, MulOp, float)                            \
  KERNEL(NAME, MulOp, double)

MUL("ZooMul")
MUL("ZooMulCopyPaste")

#define SCALE(NAME)                                     \
  REGISTER_OP(NAME)                                     \
      .Attr("T: {float, double}")                       \
      .Input("x: T")                                    \
      .Input("a: T")                                    \
      .Output("y: T")                                   \
      .SetShapeFn(shape_inference::UnchangedShape);     \
  KERNEL(NAME, ScaleOp, float)                          \
  KERNEL(NAME, ScaleOp, double)

SCALE("ZooScale")
SCALE("ZooScaleScalarPath")
SCALE("ZooScaleForgetsA")

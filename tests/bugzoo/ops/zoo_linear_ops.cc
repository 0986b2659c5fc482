// Linear-algebra and complex ops for the bug zoo (tests/bugzoo); gradients in
// tests/bugzoo/zoo_ops.py.
//
//   ZooMatVec*:  y = A x, A (m, n), x (n,)        (float, double)
//   ZooBiasAdd*: y = x + b, x (n, m), b (m,)      (float, double)
//   ZooCSquare*: y = z^2                          (complex64, complex128)
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

using namespace tensorflow;

template <typename T>
class MatVecOp : public OpKernel {
 public:
  explicit MatVecOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& a = context->input(0);
    const Tensor& x = context->input(1);
    OP_REQUIRES(context, TensorShapeUtils::IsMatrix(a.shape()) && TensorShapeUtils::IsVector(x.shape())
                             && a.dim_size(1) == x.dim_size(0),
                errors::InvalidArgument("ZooMatVec needs A (m, n) and x (n,), got ",
                                        a.shape().DebugString(), " and ", x.shape().DebugString()));
    const int64_t m = a.dim_size(0), n = a.dim_size(1);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, TensorShape({m}), &y));
    auto A = a.matrix<T>();
    auto v = x.vec<T>();
    auto out = y->vec<T>();
    for (int64_t i = 0; i < m; ++i) {
      T sum = T(0);
      for (int64_t j = 0; j < n; ++j) sum += A(i, j) * v(j);
      out(i) = sum;
    }
  }
};

template <typename T>
class BiasAddOp : public OpKernel {
 public:
  explicit BiasAddOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& b = context->input(1);
    OP_REQUIRES(context, TensorShapeUtils::IsMatrix(x.shape()) && TensorShapeUtils::IsVector(b.shape())
                             && x.dim_size(1) == b.dim_size(0),
                errors::InvalidArgument("ZooBiasAdd needs x (n, m) and b (m,), got ",
                                        x.shape().DebugString(), " and ", b.shape().DebugString()));
    Tensor* y = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, x.shape(), &y));
    auto in = x.matrix<T>();
    auto bias = b.vec<T>();
    auto out = y->matrix<T>();
    for (int64_t i = 0; i < x.dim_size(0); ++i)
      for (int64_t j = 0; j < x.dim_size(1); ++j) out(i, j) = in(i, j) + bias(j);
  }
};

template <typename T>
class ComplexSquareOp : public OpKernel {
 public:
  explicit ComplexSquareOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& z = context->input(0);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, z.shape(), &y));
    auto in = z.flat<T>();
    auto out = y->flat<T>();
    for (int64_t i = 0; i < in.size(); ++i) out(i) = in(i) * in(i);
  }
};

#define KERNEL(NAME, KERNEL_CLASS, T) \
  REGISTER_KERNEL_BUILDER(Name(NAME).Device(DEVICE_CPU).TypeConstraint<T>("T"), KERNEL_CLASS<T>);

Status MatVecShape(shape_inference::InferenceContext* c) {
  shape_inference::ShapeHandle a, x;
  TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 2, &a));
  TF_RETURN_IF_ERROR(c->WithRank(c->input(1), 1, &x));
  c->set_output(0, c->Vector(c->Dim(a, 0)));
  return absl::OkStatus();
}

#define MATVEC(NAME)                  \
  REGISTER_OP(NAME)                   \
      .Attr("T: {float, double}")     \
      .Input("a: T")                  \
      .Input("x: T")                  \
      .Output("y: T")                 \
      .SetShapeFn(MatVecShape);       \
  KERNEL(NAME, MatVecOp, float)       \
  KERNEL(NAME, MatVecOp, double)

MATVEC("ZooMatVec")
MATVEC("ZooMatVecNoTranspose")

#define BIAS_ADD(NAME)                                  \
  REGISTER_OP(NAME)                                     \
      .Attr("T: {float, double}")                       \
      .Input("x: T")                                    \
      .Input("b: T")                                    \
      .Output("y: T")                                   \
      .SetShapeFn(shape_inference::UnchangedShape);     \
  KERNEL(NAME, BiasAddOp, float)                        \
  KERNEL(NAME, BiasAddOp, double)

BIAS_ADD("ZooBiasAdd")
BIAS_ADD("ZooBiasAddFirstRow")

#define COMPLEX_SQUARE(NAME)                            \
  REGISTER_OP(NAME)                                     \
      .Attr("T: {complex64, complex128}")               \
      .Input("z: T")                                    \
      .Output("y: T")                                   \
      .SetShapeFn(shape_inference::UnchangedShape);     \
  KERNEL(NAME, ComplexSquareOp, complex64)              \
  KERNEL(NAME, ComplexSquareOp, complex128)

COMPLEX_SQUARE("ZooCSquare")
COMPLEX_SQUARE("ZooCSquareNoConj")

// RollAndSum: (x, shift) -> (rolled, total).
//   rolled[i] = x[(i - shift) mod n]   (x rolled right by `shift` along its only axis)
//   total     = sum(x)
// Two outputs and an integer input, so its gradient receives (op, d_rolled,
// d_total) and returns [dx, None].
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

using namespace tensorflow;

REGISTER_OP("RollAndSum")
    .Attr("T: {float, double}")
    .Input("x: T")
    .Input("shift: int32")
    .Output("rolled: T")
    .Output("total: T")
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      shape_inference::ShapeHandle vector;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(0), 1, &vector));
      c->set_output(0, vector);
      c->set_output(1, c->Scalar());
      return absl::OkStatus();
    });

template <typename T>
class RollAndSumOp : public OpKernel {
 public:
  explicit RollAndSumOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& shift_tensor = context->input(1);
    OP_REQUIRES(context, TensorShapeUtils::IsVector(x.shape()),
                errors::InvalidArgument("RollAndSum expects a vector, got shape ",
                                        x.shape().DebugString()));
    OP_REQUIRES(context, TensorShapeUtils::IsScalar(shift_tensor.shape()),
                errors::InvalidArgument("shift must be a scalar"));
    const int64_t n = x.dim_size(0);
    Tensor* rolled = nullptr;
    Tensor* total = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, x.shape(), &rolled));
    OP_REQUIRES_OK(context, context->allocate_output(1, TensorShape({}), &total));
    auto in = x.flat<T>();
    auto out = rolled->flat<T>();
    T sum = T(0);
    const int64_t shift = n == 0 ? 0 : ((shift_tensor.scalar<int32>()() % n) + n) % n;
    for (int64_t i = 0; i < n; ++i) {
      out((i + shift) % n) = in(i);
      sum += in(i);
    }
    total->scalar<T>()() = sum;
  }
};

#define REGISTER(T)                                                            \
  REGISTER_KERNEL_BUILDER(                                                     \
      Name("RollAndSum").Device(DEVICE_CPU).TypeConstraint<T>("T").HostMemory("shift"), \
      RollAndSumOp<T>);
REGISTER(float)
REGISTER(double)
#undef REGISTER

"""execution: how TensorFlow runs the function and its gradient, in each mode and on each device."""

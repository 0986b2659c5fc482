"""jacobian: the Jacobians that the gradients under test give, built from their rows or columns."""

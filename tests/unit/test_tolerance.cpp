#include "checks/tolerance.hpp"

#include <gtest/gtest.h>

using mpscheck::tolerance_for;

TEST(Tolerance, Float32DefaultsArePyTorchs) {
  const auto t = tolerance_for("elementwise", c10::kFloat);
  EXPECT_DOUBLE_EQ(t.rtol, 1.3e-6);
  EXPECT_DOUBLE_EQ(t.atol, 1e-5);
}

TEST(Tolerance, ConvAndMatmulAreWidenedForAccumulationOrder) {
  EXPECT_DOUBLE_EQ(tolerance_for("conv", c10::kFloat).rtol, 1e-4);
  EXPECT_DOUBLE_EQ(tolerance_for("matmul", c10::kFloat).atol, 3e-5);
}

TEST(Tolerance, ReducedPrecisionIsLooserThanFloat32) {
  EXPECT_GE(tolerance_for("elementwise", c10::kBFloat16).rtol, 1.6e-2);
  EXPECT_GE(tolerance_for("elementwise", c10::kHalf).rtol, 1e-3);
}

TEST(Tolerance, IntegersAndShapeMovesAreExact) {
  EXPECT_EQ(tolerance_for("reduction", c10::kLong).rtol, 0);
  EXPECT_EQ(tolerance_for("shape", c10::kFloat).atol, 0);
  EXPECT_GT(tolerance_for("shape", c10::kBFloat16).rtol, 0);  // input rounding only
}

TEST(Tolerance, UnknownFamilyFallsBackToTheDtypeDefault) {
  EXPECT_DOUBLE_EQ(tolerance_for("no-such-family", c10::kFloat).rtol, 1.3e-6);
}

// Written for PCP's tests in the format of openxla/stablehlo's tests/interpret: one case per
// function, separated by "// -----" lines; the second case is out of scope (f64).

func.func @maximum_f32() {
  %0 = stablehlo.constant dense<[1.0, -2.0, 0.5]> : tensor<3xf32>
  %1 = stablehlo.constant dense<[0.0, -1.0, 0.25]> : tensor<3xf32>
  %2 = stablehlo.maximum %0, %1 : tensor<3xf32>
  check.expect_almost_eq_const %2, dense<[1.0, -1.0, 0.5]> : tensor<3xf32>
  func.return
}

// -----

func.func @maximum_f64() {
  %0 = stablehlo.constant dense<[1.0, -2.0]> : tensor<2xf64>
  %1 = stablehlo.constant dense<[0.0, -1.0]> : tensor<2xf64>
  %2 = stablehlo.maximum %0, %1 : tensor<2xf64>
  check.expect_almost_eq_const %2, dense<[1.0, -1.0]> : tensor<2xf64>
  func.return
}

// -----

func.func @double(%arg0: tensor<2xi64>) -> tensor<2xi64> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<2xi64>
  func.return %0 : tensor<2xi64>
}

func.func @main() {
  %0 = stablehlo.constant dense<[3, -4]> : tensor<2xi64>
  %1 = func.call @double(%0) : (tensor<2xi64>) -> tensor<2xi64>
  check.expect_eq_const %1, dense<[6, -8]> : tensor<2xi64>
  func.return
}

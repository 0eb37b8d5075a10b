module @jit_main {
  func.func public @main() -> tensor<2xf32> {
    %0 = call @expected() : () -> tensor<2xf32>
    %1 = stablehlo.composite "my.double" %0 {decomposition = @expected} : (tensor<2xf32>) -> tensor<2xf32>
    stablehlo.custom_call @check.expect_close(%0, %0) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    check.expect_almost_eq_const %0, dense<[1.0, 2.0]> : tensor<2xf32>, tolerance = 1.0e-3
    "check.expect_eq_const"(%0) <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : (tensor<2xf32>) -> ()
    return %0 : tensor<2xf32>
  }
  func.func private @expected() -> tensor<2xf32> {
    %cst = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    return %cst : tensor<2xf32>
  }
}

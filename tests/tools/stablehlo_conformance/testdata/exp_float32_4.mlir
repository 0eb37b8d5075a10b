// Written for PCP's tests in the format of openxla/stablehlo's testdata: inputs and expected
// values in private functions defined after @main, checked by custom calls. Passes.
module @jit_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main() -> (tensor<4xf32> {jax.result_info = ""}) {
    %0 = call @inputs() : () -> tensor<4xf32>
    %1 = call @expected() : () -> tensor<4xf32>
    %2 = stablehlo.exponential %0 : tensor<4xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<4xf32>, tensor<4xf32>) -> ()
    return %2 : tensor<4xf32>
  }
  func.func private @inputs() -> (tensor<4xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[0.000000e+00, 1.000000e+00, -1.000000e+00, 2.000000e+00]> : tensor<4xf32>
    return %cst : tensor<4xf32>
  }
  func.func private @expected() -> (tensor<4xf32> {mhlo.layout_mode = "default"}) {
    %cst = stablehlo.constant dense<[1.000000e+00, 2.71828175, 0.36787945, 7.3890562]> : tensor<4xf32>
    return %cst : tensor<4xf32>
  }
}

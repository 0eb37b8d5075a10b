// Written for PCP's tests: two inputs from one multi-result call; the expected value is wrong
// on purpose (1 + 2 is not 4), so this case fails its check.
module @jit_main {
  func.func public @main() -> (tensor<2xi32> {jax.result_info = ""}) {
    %0:2 = call @inputs() : () -> (tensor<2xi32>, tensor<2xi32>)
    %1 = call @expected() : () -> tensor<2xi32>
    %2 = stablehlo.add %0#0, %0#1 : tensor<2xi32>
    stablehlo.custom_call @check.expect_eq(%2, %1) {has_side_effect = true} : (tensor<2xi32>, tensor<2xi32>) -> ()
    return %2 : tensor<2xi32>
  }
  func.func private @inputs() -> (tensor<2xi32>, tensor<2xi32>) {
    %c = stablehlo.constant dense<[1, 5]> : tensor<2xi32>
    %c_0 = stablehlo.constant dense<[2, -5]> : tensor<2xi32>
    return %c, %c_0 : tensor<2xi32>, tensor<2xi32>
  }
  func.func private @expected() -> (tensor<2xi32> {mhlo.layout_mode = "default"}) {
    %c = stablehlo.constant dense<[4, 0]> : tensor<2xi32>
    return %c : tensor<2xi32>
  }
}

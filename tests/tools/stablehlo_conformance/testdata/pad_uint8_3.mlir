// Written for PCP's tests: out of scope twice over (an op PCP lacks, an element type it lacks).
module @jit_main {
  func.func public @main() -> (tensor<5xui8> {jax.result_info = ""}) {
    %c = stablehlo.constant dense<[1, 2, 3]> : tensor<3xui8>
    %c_0 = stablehlo.constant dense<0> : tensor<ui8>
    %0 = stablehlo.pad %c, %c_0, low = [1], high = [1], interior = [0] : (tensor<3xui8>, tensor<ui8>) -> tensor<5xui8>
    %1 = stablehlo.constant dense<[0, 1, 2, 3, 0]> : tensor<5xui8>
    stablehlo.custom_call @check.expect_eq(%0, %1) {has_side_effect = true} : (tensor<5xui8>, tensor<5xui8>) -> ()
    return %0 : tensor<5xui8>
  }
}

func.func @main() -> (tensor<4xi64>, tensor<2x3xf32>) {
  %c = stablehlo.constant dense<4> : tensor<1xi64>
  %0 = stablehlo.dynamic_iota %c, dim = 0 : (tensor<1xi64>) -> tensor<4xi64>
  %c2 = "stablehlo.constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %1 = "stablehlo.dynamic_iota"(%c2) {iota_dimension = 1 : i64} : (tensor<2xi64>) -> tensor<2x3xf32>
  return %0, %1 : tensor<4xi64>, tensor<2x3xf32>
}

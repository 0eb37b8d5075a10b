module {
  func.func @main(%arg0: tensor<4xi1>, %arg1: tensor<4xi1>, %arg2: tensor<4xi64>) -> (tensor<4xi1>, tensor<4xi64>) {
    %0 = stablehlo.and %arg0, %arg1 : tensor<4xi1>
    %1 = stablehlo.not %0 : tensor<4xi1>
    %2 = stablehlo.or %1, %arg1 : tensor<4xi1>
    %3 = "stablehlo.not"(%arg2) : (tensor<4xi64>) -> tensor<4xi64>
    %4 = "stablehlo.or"(%3, %arg2) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    return %2, %4 : tensor<4xi1>, tensor<4xi64>
  }
}

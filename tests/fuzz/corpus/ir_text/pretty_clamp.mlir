module {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %cst_0 = stablehlo.constant dense<6.000000e+00> : tensor<f32>
    %0 = stablehlo.clamp %cst, %arg0, %cst_0 : (tensor<f32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %1 = "stablehlo.clamp"(%arg1, %arg1, %arg1) : (tensor<2x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    return %0, %1 : tensor<2x3xf32>, tensor<2x3xi32>
  }
}

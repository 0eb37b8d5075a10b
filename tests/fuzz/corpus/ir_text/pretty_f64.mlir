module @jit_scale {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32> {jax.result_info = ""}) {
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f64>
    %cst_0 = stablehlo.constant dense<0x3FF0000000000000> : tensor<f64>
    %cst_1 = stablehlo.constant dense<[1.0, -2.5, 1.000000e-01, 0.0]> : tensor<4xf64>
    %0 = stablehlo.rsqrt %cst : tensor<f64>
    %1 = stablehlo.divide %cst_0, %0 : tensor<f64>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f64>) -> tensor<4xf64>
    %3 = stablehlo.convert %arg0 : (tensor<4xf32>) -> tensor<4xf64>
    %4 = stablehlo.multiply %3, %2 : tensor<4xf64>
    %5 = stablehlo.compare GT, %4, %cst_1, FLOAT : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xi1>
    %6 = stablehlo.select %5, %4, %cst_1 : tensor<4xi1>, tensor<4xf64>
    %7 = stablehlo.convert %6 : (tensor<4xf64>) -> tensor<4xf32>
    return %7 : tensor<4xf32>
  }
}

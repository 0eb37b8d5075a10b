module @jit_main attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32> {jax.result_info = ""}) {
    %0:2 = call @inputs() : () -> (tensor<2xf32>, tensor<2xi32>)
    %1 = func.call @scale(%arg0, %0#0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = "func.call"(%1) <{callee = @scale_self}> : (tensor<2xf32>) -> tensor<2xf32>
    return %2 : tensor<2xf32>
  }
  func.func private @scale_self(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = call @scale(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @scale(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func private @inputs() -> (tensor<2xf32>, tensor<2xi32>) {
    %cst = stablehlo.constant dense<[1.5, -2.0]> : tensor<2xf32>
    %c = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
    return %cst, %c : tensor<2xf32>, tensor<2xi32>
  }
}

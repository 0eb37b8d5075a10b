#loc = loc(unknown)
#loc1 = loc("model.py":12:0)
module @jit_loss attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4x8xf32> {mhlo.sharding = "{replicated}"} loc("x"), %arg1: tensor<2x4xi32> loc("targets")) -> (tensor<f32> {jax.result_info = "loss"}, tensor<48xf32>, tensor<2x4xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32> loc(#loc)
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %w = stablehlo.constant dense_resource<torch_tensor_8_8_torch.float32> : tensor<8x8xf32>
    %0 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc(#loc1)
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.maximum across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc(fused[#loc1, "softmax"])
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %3 = stablehlo.subtract %0, %2 : tensor<2x4x4xf32>
    %4 = stablehlo.exponential %3 : tensor<2x4x4xf32>
    %5 = stablehlo.reduce(%4 init: %cst_0) across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
     reducer(%arg2: tensor<f32> loc(unknown), %arg3: tensor<f32> loc(unknown))  {
      %30 = stablehlo.add %arg2, %arg3 : tensor<f32> loc(#loc1)
      stablehlo.return %30 : tensor<f32> loc(#loc1)
    } loc(#loc1)
    %6 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %7 = stablehlo.divide %4, %6 : tensor<2x4x4xf32>
    %8 = stablehlo.dot_general %7, %arg0, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %9 = stablehlo.dot_general %8, %w, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %10 = stablehlo.iota dim = 2 : tensor<2x4x8xi32>
    %11 = stablehlo.broadcast_in_dim %arg1, dims = [0, 1] : (tensor<2x4xi32>) -> tensor<2x4x8xi32>
    %12 = stablehlo.compare  EQ, %10, %11,  SIGNED : (tensor<2x4x8xi32>, tensor<2x4x8xi32>) -> tensor<2x4x8xi1>
    %13 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x4x8xf32>
    %14 = stablehlo.select %12, %9, %13 : tensor<2x4x8xi1>, tensor<2x4x8xf32>
    %15 = stablehlo.reduce(%14 init: %cst_0) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<f32>
    %16 = stablehlo.negate %15 : tensor<f32>
    %cst_1 = arith.constant dense<0x3E000000> : tensor<f32>
    %17 = stablehlo.multiply %16, %cst_1 : tensor<f32>
    %18 = stablehlo.transpose %9, dims = [0, 2, 1] : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
    %19 = stablehlo.slice %18 [0:2, 0:8:2, 1:4] : (tensor<2x8x4xf32>) -> tensor<2x4x3xf32>
    %20 = stablehlo.reshape %19 : (tensor<2x4x3xf32>) -> tensor<24xf32>
    %21 = stablehlo.concatenate %20, %20, dim = 0 : (tensor<24xf32>, tensor<24xf32>) -> tensor<48xf32>
    %22 = stablehlo.convert %arg1 : (tensor<2x4xi32>) -> tensor<2x4xf32>
    %23 = stablehlo.rsqrt %22 : tensor<2x4xf32>
    return %17, %21, %23 : tensor<f32>, tensor<48xf32>, tensor<2x4xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc2 = loc("model.py":20:4)
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_8_8_torch.float32: "0x04000000000040C0000030C0000020C0000010C0000000C00000E0BF0000C0BF0000A0BF000080BF000040BF000000BF000080BE000000000000803E0000003F0000403F0000803F0000A03F0000C03F0000E03F0000004000001040000020400000304000004040000050400000604000007040000080400000884000009040000098400000A0400000A8400000B0400000B8400000C0400000C8400000D0400000D8400000E0400000E8400000F0400000F84000000041000004410000084100000C4100001041000014410000184100001C4100002041000024410000284100002C4100003041000034410000384100003C4100004041000044410000484100004C41"
    }
  }
#-}

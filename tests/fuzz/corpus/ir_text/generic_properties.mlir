"builtin.module"() ({
  "func.func"() ({
  ^bb0(%arg0: tensor<2x4x8xf32>, %arg1: tensor<2x4xi32>):
    %cst = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %cst_0 = "stablehlo.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %w = "stablehlo.constant"() <{value = dense<"0x000040C0000030C0000020C0000010C0000000C00000E0BF0000C0BF0000A0BF000080BF000040BF000000BF000080BE000000000000803E0000003F0000403F0000803F0000A03F0000C03F0000E03F0000004000001040000020400000304000004040000050400000604000007040000080400000884000009040000098400000A0400000A8400000B0400000B8400000C0400000C8400000D0400000D8400000E0400000E8400000F0400000F84000000041000004410000084100000C4100001041000014410000184100001C4100002041000024410000284100002C4100003041000034410000384100003C4100004041000044410000484100004C41"> : tensor<8x8xf32>}> : () -> tensor<8x8xf32>
    %0 = "stablehlo.dot_general"(%arg0, %arg0) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %1 = "stablehlo.reduce"(%0, %cst) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%m) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 2>} : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %2 = "stablehlo.broadcast_in_dim"(%1) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %3 = "stablehlo.subtract"(%0, %2) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %4 = "stablehlo.exponential"(%3) : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %5 = "stablehlo.reduce"(%4, %cst_0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) {dimensions = dense<2> : tensor<1xi64>} : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %6 = "stablehlo.broadcast_in_dim"(%5) {broadcast_dimensions = dense<[0, 1]> : tensor<2xi64>} : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %7 = "stablehlo.divide"(%4, %6) : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %8 = "stablehlo.dot_general"(%7, %arg0) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %9 = "stablehlo.dot_general"(%8, %w) {dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]>} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %10 = "stablehlo.iota"() {iota_dimension = 2 : i64} : () -> tensor<2x4x8xi32>
    %11 = "stablehlo.broadcast_in_dim"(%arg1) {broadcast_dimensions = dense<[0, 1]> : tensor<2xi64>} : (tensor<2x4xi32>) -> tensor<2x4x8xi32>
    %12 = "stablehlo.compare"(%10, %11) {compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction EQ>} : (tensor<2x4x8xi32>, tensor<2x4x8xi32>) -> tensor<2x4x8xi1>
    %13 = "stablehlo.broadcast_in_dim"(%cst_0) {broadcast_dimensions = dense<> : tensor<0xi64>} : (tensor<f32>) -> tensor<2x4x8xf32>
    %14 = "stablehlo.select"(%12, %9, %13) : (tensor<2x4x8xi1>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %15 = "stablehlo.reduce"(%14, %cst_0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) {dimensions = dense<[0, 1, 2]> : tensor<3xi64>} : (tensor<2x4x8xf32>, tensor<f32>) -> tensor<f32>
    %16 = "stablehlo.negate"(%15) : (tensor<f32>) -> tensor<f32>
    %cst_1 = "stablehlo.constant"() {value = dense<1.250000e-01> : tensor<f32>} : () -> tensor<f32>
    %17 = "stablehlo.multiply"(%16, %cst_1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %18 = "stablehlo.transpose"(%9) {permutation = dense<[0, 2, 1]> : tensor<3xi64>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
    %19 = "stablehlo.slice"(%18) {start_indices = dense<[0, 0, 1]> : tensor<3xi64>, limit_indices = dense<[2, 8, 4]> : tensor<3xi64>, strides = dense<[1, 2, 1]> : tensor<3xi64>} : (tensor<2x8x4xf32>) -> tensor<2x4x3xf32>
    %20 = "stablehlo.reshape"(%19) : (tensor<2x4x3xf32>) -> tensor<24xf32>
    %21 = "stablehlo.concatenate"(%20, %20) {dimension = 0 : i64} : (tensor<24xf32>, tensor<24xf32>) -> tensor<48xf32>
    %22 = "stablehlo.convert"(%arg1) : (tensor<2x4xi32>) -> tensor<2x4xf32>
    %23 = "stablehlo.rsqrt"(%22) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%17, %21, %23) : (tensor<f32>, tensor<48xf32>, tensor<2x4xf32>) -> ()
  }) {function_type = (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<48xf32>, tensor<2x4xf32>), sym_name = "main"} : () -> ()
}) : () -> ()

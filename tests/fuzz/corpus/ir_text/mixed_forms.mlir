"builtin.module"() ({
  func.func @pretty(%arg0: tensor<4x8xf32>, %ids: tensor<3xi32>) -> tensor<3x8xf32> {
    %0 = "stablehlo.gather"(%arg0, %ids) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<4x8xf32>, tensor<3xi32>) -> tensor<3x8xf32>
    %1 = stablehlo.tanh %0 : tensor<3x8xf32>
    "func.return"(%1) : (tensor<3x8xf32>) -> ()
  }
  "func.func"() ({
  ^bb0(%t: tensor<4x8xf32>, %i: tensor<3xi32>, %u: tensor<3x8xf32>):
    %s = "stablehlo.scatter"(%t, %i, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %x = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %x : tensor<f32>
    }) : (tensor<4x8xf32>, tensor<3xi32>, tensor<3x8xf32>) -> tensor<4x8xf32>
    %e = chlo.erf %s : tensor<4x8xf32> -> tensor<4x8xf32>
    return %e : tensor<4x8xf32>
  }) {function_type = (tensor<4x8xf32>, tensor<3xi32>, tensor<3x8xf32>) -> tensor<4x8xf32>, sym_name = "generic"} : () -> ()
}) : () -> ()

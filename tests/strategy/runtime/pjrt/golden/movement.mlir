module @movement attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
  func.func public @main(%v0: tensor<4x2xf32>, %v1: tensor<3xi32>) -> (tensor<3x4xf32>, tensor<2x6xf32>, tensor<36xf32>, tensor<i64>) {
    %v2 = "stablehlo.gather"(%v0, %v1) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 2>} : (tensor<4x2xf32>, tensor<3xi32>) -> tensor<3x2xf32>
    %t0 = "stablehlo.broadcast_in_dim"(%v1) {broadcast_dimensions = array<i64: 0>} : (tensor<3xi32>) -> tensor<3x4xi32>
    %t1 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<3x4xi32>
    %t2 = "stablehlo.compare"(%t0, %t1) {comparison_direction = #stablehlo<comparison_direction EQ>} : (tensor<3x4xi32>, tensor<3x4xi32>) -> tensor<3x4xi1>
    %t3 = "stablehlo.constant"() {value = dense<1.00000000000000000e+00> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %t4 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %v3 = "stablehlo.select"(%t2, %t3, %t4) : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %v4 = "stablehlo.scatter"(%v0, %v1, %v2) ({
    ^bb0(%t5: tensor<f32>, %t6: tensor<f32>):
      %t7 = "stablehlo.add"(%t5, %t6) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t7) : (tensor<f32>) -> ()
    }) {indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false} : (tensor<4x2xf32>, tensor<3xi32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %v5 = "stablehlo.transpose"(%v4) {permutation = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
    %v6 = "stablehlo.slice"(%v5) {start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 4>, strides = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x3xf32>
    %v7 = "stablehlo.concatenate"(%v6, %v6) {dimension = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
    %t8 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %t9 = "stablehlo.reduce"(%v7, %t8) ({
    ^bb0(%t10: tensor<f32>, %t11: tensor<f32>):
      %t12 = "stablehlo.maximum"(%t10, %t11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t12) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x6xf32>, tensor<f32>) -> tensor<2xf32>
    %t13 = "stablehlo.broadcast_in_dim"(%t9) {broadcast_dimensions = array<i64: 0>} : (tensor<2xf32>) -> tensor<2x6xf32>
    %t14 = "stablehlo.subtract"(%v7, %t13) : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
    %t15 = "stablehlo.exponential"(%t14) : (tensor<2x6xf32>) -> tensor<2x6xf32>
    %t16 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %t17 = "stablehlo.reduce"(%t15, %t16) ({
    ^bb0(%t18: tensor<f32>, %t19: tensor<f32>):
      %t20 = "stablehlo.add"(%t18, %t19) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t20) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x6xf32>, tensor<f32>) -> tensor<2xf32>
    %t21 = "stablehlo.broadcast_in_dim"(%t17) {broadcast_dimensions = array<i64: 0>} : (tensor<2xf32>) -> tensor<2x6xf32>
    %v8 = "stablehlo.divide"(%t15, %t21) : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
    %t22 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %t23 = "stablehlo.reduce"(%v7, %t22) ({
    ^bb0(%t24: tensor<f32>, %t25: tensor<f32>):
      %t26 = "stablehlo.maximum"(%t24, %t25) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t26) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 1>} : (tensor<2x6xf32>, tensor<f32>) -> tensor<2xf32>
    %v9 = "stablehlo.reshape"(%t23) : (tensor<2xf32>) -> tensor<2x1xf32>
    %t27 = "stablehlo.broadcast_in_dim"(%v9) {broadcast_dimensions = array<i64: 0, 1>} : (tensor<2x1xf32>) -> tensor<2x6xf32>
    %t28 = "stablehlo.compare"(%v7, %t27) {comparison_direction = #stablehlo<comparison_direction GE>} : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xi1>
    %v10 = "stablehlo.convert"(%t28) : (tensor<2x6xi1>) -> tensor<2x6xui8>
    %v11 = "stablehlo.constant"() {value = dense<-1.000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %t29 = "stablehlo.constant"() {value = dense<0> : tensor<2x6xui8>} : () -> tensor<2x6xui8>
    %t30 = "stablehlo.compare"(%v10, %t29) {comparison_direction = #stablehlo<comparison_direction NE>} : (tensor<2x6xui8>, tensor<2x6xui8>) -> tensor<2x6xi1>
    %t31 = "stablehlo.broadcast_in_dim"(%v11) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2x6xf32>
    %v12 = "stablehlo.select"(%t30, %v7, %t31) : (tensor<2x6xi1>, tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
    %v13 = "stablehlo.all_gather"(%v12) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x6xf32>) -> tensor<4x6xf32>
    %v14 = "stablehlo.reduce_scatter"(%v13) ({
    ^bb0(%t32: tensor<f32>, %t33: tensor<f32>):
      %t34 = "stablehlo.add"(%t32, %t33) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t34) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, scatter_dimension = 1 : i64} : (tensor<4x6xf32>) -> tensor<4x3xf32>
    %v15 = "stablehlo.all_to_all"(%v14) {concat_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, split_count = 2 : i64, split_dimension = 0 : i64} : (tensor<4x3xf32>) -> tensor<2x6xf32>
    %v16 = "stablehlo.collective_permute"(%v15) {source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>} : (tensor<2x6xf32>) -> tensor<2x6xf32>
    %v17 = "stablehlo.convert"(%v16) : (tensor<2x6xf32>) -> tensor<2x6xbf16>
    %v18 = "stablehlo.convert"(%v17) : (tensor<2x6xbf16>) -> tensor<2x6xf32>
    %v19 = "stablehlo.negate"(%v18) : (tensor<2x6xf32>) -> tensor<2x6xf32>
    %v20 = "stablehlo.exponential"(%v19) : (tensor<2x6xf32>) -> tensor<2x6xf32>
    %t35 = "stablehlo.broadcast_in_dim"(%v20) {broadcast_dimensions = array<i64: 1, 2>} : (tensor<2x6xf32>) -> tensor<3x2x6xf32>
    %v21 = "stablehlo.reshape"(%t35) : (tensor<3x2x6xf32>) -> tensor<3x2x6xf32>
    %v22 = "stablehlo.reshape"(%v21) : (tensor<3x2x6xf32>) -> tensor<36xf32>
    %t36 = "stablehlo.replica_id"() : () -> tensor<ui32>
    %v23 = "stablehlo.convert"(%t36) : (tensor<ui32>) -> tensor<i32>
    %v24 = "stablehlo.convert"(%v23) : (tensor<i32>) -> tensor<i64>
    "func.return"(%v3, %v8, %v22, %v24) : (tensor<3x4xf32>, tensor<2x6xf32>, tensor<36xf32>, tensor<i64>) -> ()
  }
}

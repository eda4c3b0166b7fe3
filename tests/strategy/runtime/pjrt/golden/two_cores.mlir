module @two_cores attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {
  func.func public @main(%v0: tensor<2xf32>, %var0_core1: tensor<2xf32> {tf.aliasing_output = 3 : i32}) -> (tensor<2xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>) {
    %v1 = "stablehlo.reshape"(%var0_core1) : (tensor<2xf32>) -> tensor<2xf32>
    %t0 = "stablehlo.collective_permute"(%v0) {source_target_pairs = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>  // core 0 -> core 1
    %v2 = "stablehlo.multiply"(%t0, %v1) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v3 = "stablehlo.add"(%var0_core1, %v2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v4 = "stablehlo.all_gather"(%v2) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<4xf32>
    %t1 = "stablehlo.collective_permute"(%v2) {source_target_pairs = dense<[[1, 0], [3, 2]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>  // core 1 -> core 0
    %v5 = "stablehlo.all_reduce"(%t1) ({
    ^bb0(%t2: tensor<f32>, %t3: tensor<f32>):
      %t4 = "stablehlo.add"(%t2, %t3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t4) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    %t5 = "stablehlo.replica_id"() : () -> tensor<ui32>
    %t6 = "stablehlo.constant"() {value = dense<2> : tensor<ui32>} : () -> tensor<ui32>
    %t7 = "stablehlo.divide"(%t5, %t6) : (tensor<ui32>, tensor<ui32>) -> tensor<ui32>
    %v6 = "stablehlo.convert"(%t7) : (tensor<ui32>) -> tensor<i32>
    %v7 = "stablehlo.convert"(%v6) : (tensor<i32>) -> tensor<f32>
    %t8 = "stablehlo.broadcast_in_dim"(%v7) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2xf32>
    %v8 = "stablehlo.add"(%v5, %t8) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%v8, %v3, %v4, %v3) : (tensor<2xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>) -> ()
  }
}

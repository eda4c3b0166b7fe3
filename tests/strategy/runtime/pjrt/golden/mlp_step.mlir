module @mlp_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
  func.func public @main(%v0: tensor<4x3xf32>, %v1: tensor<4x2xf32>, %size_p0_d0: tensor<i32>, %size_p1_d0: tensor<i32>, %var0: tensor<3x2xf32> {tf.aliasing_output = 1 : i32}, %var1: tensor<2xf32> {tf.aliasing_output = 2 : i32}) -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>) {
    %v2 = "stablehlo.reshape"(%var0) : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %v3 = "stablehlo.reshape"(%var1) : (tensor<2xf32>) -> tensor<2xf32>
    %v4 = "stablehlo.dot_general"(%v0, %v2) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %t0 = "stablehlo.broadcast_in_dim"(%v3) {broadcast_dimensions = array<i64: 1>} : (tensor<2xf32>) -> tensor<4x2xf32>
    %v5 = "stablehlo.add"(%v4, %t0) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %v6 = "stablehlo.tanh"(%v5) : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %v7 = "stablehlo.subtract"(%v6, %v1) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %v8 = "stablehlo.multiply"(%v7, %v7) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %t1 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x2xi32>
    %t2 = "stablehlo.broadcast_in_dim"(%size_p1_d0) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<4x2xi32>
    %t3 = "stablehlo.compare"(%t1, %t2) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<4x2xi32>, tensor<4x2xi32>) -> tensor<4x2xi1>
    %t4 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
    %t5 = "stablehlo.select"(%t3, %v8, %t4) : (tensor<4x2xi1>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %t6 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %t7 = "stablehlo.reduce"(%t5, %t6) ({
    ^bb0(%t8: tensor<f32>, %t9: tensor<f32>):
      %t10 = "stablehlo.add"(%t8, %t9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t10) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0, 1>} : (tensor<4x2xf32>, tensor<f32>) -> tensor<f32>
    %t11 = "stablehlo.constant"() {value = dense<2.00000000000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %t12 = "stablehlo.convert"(%size_p1_d0) : (tensor<i32>) -> tensor<f32>
    %t13 = "stablehlo.multiply"(%t11, %t12) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %t14 = "stablehlo.broadcast_in_dim"(%t13) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<f32>
    %t15 = "stablehlo.divide"(%t7, %t14) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %v9 = "stablehlo.reshape"(%t15) : (tensor<f32>) -> tensor<f32>
    %v10 = "stablehlo.constant"() {value = dense<2.000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %v11 = "stablehlo.multiply"(%v6, %v6) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %v12 = "stablehlo.constant"() {value = dense<1.000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %t16 = "stablehlo.broadcast_in_dim"(%v12) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x2xf32>
    %v13 = "stablehlo.subtract"(%t16, %v11) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %t17 = "stablehlo.broadcast_in_dim"(%v10) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<4x2xf32>
    %v14 = "stablehlo.multiply"(%t17, %v7) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %v15 = "stablehlo.multiply"(%v14, %v13) : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %t18 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x3xi32>
    %t19 = "stablehlo.broadcast_in_dim"(%size_p0_d0) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<4x3xi32>
    %t20 = "stablehlo.compare"(%t18, %t19) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<4x3xi32>, tensor<4x3xi32>) -> tensor<4x3xi1>
    %t21 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
    %t22 = "stablehlo.select"(%t20, %v0, %t21) : (tensor<4x3xi1>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %t23 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x2xi32>
    %t24 = "stablehlo.broadcast_in_dim"(%size_p0_d0) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<4x2xi32>
    %t25 = "stablehlo.compare"(%t23, %t24) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<4x2xi32>, tensor<4x2xi32>) -> tensor<4x2xi1>
    %t26 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
    %t27 = "stablehlo.select"(%t25, %v15, %t26) : (tensor<4x2xi1>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %v16 = "stablehlo.dot_general"(%t22, %t27) {dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [], rhs_batching_dimensions = [], lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
    %t28 = "stablehlo.all_reduce"(%v16) ({
    ^bb0(%t29: tensor<f32>, %t30: tensor<f32>):
      %t31 = "stablehlo.add"(%t29, %t30) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t31) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %t32 = "stablehlo.constant"() {value = dense<2.00000000000000000e+00> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
    %v17 = "stablehlo.divide"(%t28, %t32) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
    %t33 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<4x2xi32>
    %t34 = "stablehlo.broadcast_in_dim"(%size_p0_d0) {broadcast_dimensions = array<i64>} : (tensor<i32>) -> tensor<4x2xi32>
    %t35 = "stablehlo.compare"(%t33, %t34) {comparison_direction = #stablehlo<comparison_direction LT>} : (tensor<4x2xi32>, tensor<4x2xi32>) -> tensor<4x2xi1>
    %t36 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<4x2xf32>} : () -> tensor<4x2xf32>
    %t37 = "stablehlo.select"(%t35, %v15, %t36) : (tensor<4x2xi1>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    %t38 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %t39 = "stablehlo.reduce"(%t37, %t38) ({
    ^bb0(%t40: tensor<f32>, %t41: tensor<f32>):
      %t42 = "stablehlo.add"(%t40, %t41) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t42) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<4x2xf32>, tensor<f32>) -> tensor<2xf32>
    %v18 = "stablehlo.reshape"(%t39) : (tensor<2xf32>) -> tensor<2xf32>
    %t43 = "stablehlo.all_reduce"(%v18) ({
    ^bb0(%t44: tensor<f32>, %t45: tensor<f32>):
      %t46 = "stablehlo.add"(%t44, %t45) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t46) : (tensor<f32>) -> ()
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    %t47 = "stablehlo.constant"() {value = dense<2.00000000000000000e+00> : tensor<2xf32>} : () -> tensor<2xf32>
    %v19 = "stablehlo.divide"(%t43, %t47) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v20 = "stablehlo.constant"() {value = dense<1.000000015e-01> : tensor<f32>} : () -> tensor<f32>
    %t48 = "stablehlo.broadcast_in_dim"(%v20) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<3x2xf32>
    %v21 = "stablehlo.multiply"(%t48, %v17) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
    %v22 = "stablehlo.subtract"(%v2, %v21) : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
    %v23 = "stablehlo.reshape"(%v22) : (tensor<3x2xf32>) -> tensor<3x2xf32>
    %t49 = "stablehlo.broadcast_in_dim"(%v20) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<2xf32>
    %v24 = "stablehlo.multiply"(%t49, %v19) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %v25 = "stablehlo.negate"(%v24) : (tensor<2xf32>) -> tensor<2xf32>
    %v26 = "stablehlo.add"(%var1, %v25) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%v9, %v23, %v26) : (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>) -> ()
  }
}

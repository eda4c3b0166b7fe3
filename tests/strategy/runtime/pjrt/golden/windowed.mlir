module @windowed attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%v0: tensor<2x5x5x3xf32>, %v1: tensor<3x3x3x4xf32>) -> (tensor<2x3x3x4xf32>, tensor<2x3x3x4xf32>, tensor<2x5x5x3xf32>, tensor<3x3x3x4xf32>, tensor<3x3x3x4xf32>, tensor<2x3x3x3xf32>, tensor<2x5x5x3xf32>, tensor<2x2x2x3xf32>, tensor<2x5x5x3xf32>) {
    %v2 = "stablehlo.convolution"(%v0, %v1) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 2, 2>} : (tensor<2x5x5x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x3x3x4xf32>
    %v3 = "stablehlo.convolution"(%v0, %v1) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>} : (tensor<2x5x5x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x3x3x4xf32>
    %t0 = "stablehlo.reverse"(%v1) {dimensions = array<i64: 0, 1>} : (tensor<3x3x3x4xf32>) -> tensor<3x3x3x4xf32>
    %v4 = "stablehlo.convolution"(%v2, %t0) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 2, 2>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>} : (tensor<2x3x3x4xf32>, tensor<3x3x3x4xf32>) -> tensor<2x5x5x3xf32>
    %v5 = "stablehlo.convolution"(%v0, %v3) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>} : (tensor<2x5x5x3xf32>, tensor<2x3x3x4xf32>) -> tensor<3x3x3x4xf32>
    %v6 = "stablehlo.convolution"(%v0, %v2) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[1, 1], [1, 1]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], rhs_dilation = array<i64: 2, 2>, window_strides = array<i64: 1, 1>} : (tensor<2x5x5x3xf32>, tensor<2x3x3x4xf32>) -> tensor<3x3x3x4xf32>
    %t1 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %v7 = "stablehlo.reduce_window"(%v0, %t1) ({
    ^bb0(%t2: tensor<f32>, %t3: tensor<f32>):
      %t4 = "stablehlo.maximum"(%t2, %t3) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t4) : (tensor<f32>) -> ()
    }) {padding = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<2x5x5x3xf32>, tensor<f32>) -> tensor<2x3x3x3xf32>
    %t5 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %t6 = "stablehlo.pad"(%v0, %t5) {edge_padding_high = array<i64: 0, 1, 1, 0>, edge_padding_low = array<i64: 0, 1, 1, 0>, interior_padding = array<i64: 0, 0, 0, 0>} : (tensor<2x5x5x3xf32>, tensor<f32>) -> tensor<2x7x7x3xf32>
    %t7 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %t8 = "stablehlo.select_and_scatter"(%t6, %v7, %t7) ({
    ^bb0(%t9: tensor<f32>, %t10: tensor<f32>):
      %t11 = "stablehlo.compare"(%t9, %t10) {comparison_direction = #stablehlo<comparison_direction GE>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%t11) : (tensor<i1>) -> ()
    }, {
    ^bb0(%t12: tensor<f32>, %t13: tensor<f32>):
      %t14 = "stablehlo.add"(%t12, %t13) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t14) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<2x7x7x3xf32>, tensor<2x3x3x3xf32>, tensor<f32>) -> tensor<2x7x7x3xf32>
    %v8 = "stablehlo.slice"(%t8) {limit_indices = array<i64: 2, 6, 6, 3>, start_indices = array<i64: 0, 1, 1, 0>, strides = array<i64: 1, 1, 1, 1>} : (tensor<2x7x7x3xf32>) -> tensor<2x5x5x3xf32>
    %t15 = "stablehlo.constant"() {value = dense<0xFF800000> : tensor<f32>} : () -> tensor<f32>
    %v9 = "stablehlo.reduce_window"(%v0, %t15) ({
    ^bb0(%t16: tensor<f32>, %t17: tensor<f32>):
      %t18 = "stablehlo.maximum"(%t16, %t17) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t18) : (tensor<f32>) -> ()
    }) {padding = dense<[[0, 0], [0, 0], [0, 0], [0, 0]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<2x5x5x3xf32>, tensor<f32>) -> tensor<2x2x2x3xf32>
    %t19 = "stablehlo.constant"() {value = dense<0.00000000000000000e+00> : tensor<f32>} : () -> tensor<f32>
    %v10 = "stablehlo.select_and_scatter"(%v0, %v9, %t19) ({
    ^bb0(%t20: tensor<f32>, %t21: tensor<f32>):
      %t22 = "stablehlo.compare"(%t20, %t21) {comparison_direction = #stablehlo<comparison_direction GE>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%t22) : (tensor<i1>) -> ()
    }, {
    ^bb0(%t23: tensor<f32>, %t24: tensor<f32>):
      %t25 = "stablehlo.add"(%t23, %t24) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%t25) : (tensor<f32>) -> ()
    }) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<2x5x5x3xf32>, tensor<2x2x2x3xf32>, tensor<f32>) -> tensor<2x5x5x3xf32>
    "func.return"(%v2, %v3, %v4, %v5, %v6, %v7, %v8, %v9, %v10) : (tensor<2x3x3x4xf32>, tensor<2x3x3x4xf32>, tensor<2x5x5x3xf32>, tensor<3x3x3x4xf32>, tensor<3x3x3x4xf32>, tensor<2x3x3x3xf32>, tensor<2x5x5x3xf32>, tensor<2x2x2x3xf32>, tensor<2x5x5x3xf32>) -> ()
  }
}

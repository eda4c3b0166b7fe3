module @jit_train_step attributes {mhlo.num_partitions = 16 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<512x2048xf32> {mhlo.sharding = "{devices=[1,2,8]<=[8,2]T(1,0) last_tile_dim_replicate}"}, %arg1: tensor<2048xf32> {mhlo.sharding = "{devices=[2,8]<=[8,2]T(1,0) last_tile_dim_replicate}"}, %arg2: tensor<2048x512xf32> {mhlo.sharding = "{devices=[2,1,8]<=[8,2]T(1,0) last_tile_dim_replicate}"}, %arg3: tensor<512xf32> {mhlo.sharding = "{replicated}"}, %arg4: tensor<1024x512xf32> {mhlo.sharding = "{devices=[8,1,2]<=[16] last_tile_dim_replicate}"}, %arg5: tensor<1024x512xf32> {mhlo.sharding = "{devices=[8,1,2]<=[16] last_tile_dim_replicate}"}) -> (tensor<512x2048xf32> {jax.result_info = "result[0][0]", mhlo.sharding = "{devices=[1,2,8]<=[8,2]T(1,0) last_tile_dim_replicate}"}, tensor<2048xf32> {jax.result_info = "result[0][1]", mhlo.sharding = "{devices=[2,8]<=[8,2]T(1,0) last_tile_dim_replicate}"}, tensor<2048x512xf32> {jax.result_info = "result[0][2]", mhlo.sharding = "{devices=[2,1,8]<=[8,2]T(1,0) last_tile_dim_replicate}"}, tensor<512xf32> {jax.result_info = "result[0][3]", mhlo.sharding = "{replicated}"}, tensor<f32> {jax.result_info = "result[1]", mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %arg4, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x512xf32>, tensor<512x2048xf32>) -> tensor<1024x2048xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<2048xf32>) -> tensor<1024x2048xf32>
    %2 = stablehlo.add %0, %1 : tensor<1024x2048xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1024x2048xf32>
    %4 = stablehlo.maximum %2, %3 : tensor<1024x2048xf32>
    %5 = stablehlo.dot_general %4, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048xf32>, tensor<2048x512xf32>) -> tensor<1024x512xf32>
    %6 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<512xf32>) -> tensor<1024x512xf32>
    %7 = stablehlo.add %5, %6 : tensor<1024x512xf32>
    %8 = stablehlo.subtract %7, %arg5 : tensor<1024x512xf32>
    %9 = stablehlo.multiply %8, %8 : tensor<1024x512xf32>
    %10 = stablehlo.reduce(%9 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<1024x512xf32>, tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<1.907348633e-06> : tensor<f32>
    %11 = stablehlo.multiply %10, %cst_0 : tensor<f32>
    %cst_1 = stablehlo.constant dense<3.814697266e-06> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1024x512xf32>
    %13 = stablehlo.multiply %8, %12 : tensor<1024x512xf32>
    %14 = stablehlo.dot_general %4, %13, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x2048xf32>, tensor<1024x512xf32>) -> tensor<2048x512xf32>
    %15 = stablehlo.reduce(%13 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<1024x512xf32>, tensor<f32>) -> tensor<512xf32>
    %16 = stablehlo.dot_general %13, %arg2, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<1024x512xf32>, tensor<2048x512xf32>) -> tensor<1024x2048xf32>
    %17 = stablehlo.compare  GT, %2, %3,  FLOAT : (tensor<1024x2048xf32>, tensor<1024x2048xf32>) -> tensor<1024x2048xi1>
    %18 = stablehlo.select %17, %16, %3 : tensor<1024x2048xi1>, tensor<1024x2048xf32>
    %19 = stablehlo.dot_general %arg4, %18, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<1024x512xf32>, tensor<1024x2048xf32>) -> tensor<512x2048xf32>
    %20 = stablehlo.reduce(%18 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<1024x2048xf32>, tensor<f32>) -> tensor<2048xf32>
    %cst_2 = stablehlo.constant dense<1.000000e-02> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<512x2048xf32>
    %22 = stablehlo.multiply %21, %19 : tensor<512x2048xf32>
    %23 = stablehlo.subtract %arg0, %22 : tensor<512x2048xf32>
    %24 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2048xf32>
    %25 = stablehlo.multiply %24, %20 : tensor<2048xf32>
    %26 = stablehlo.subtract %arg1, %25 : tensor<2048xf32>
    %27 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2048x512xf32>
    %28 = stablehlo.multiply %27, %14 : tensor<2048x512xf32>
    %29 = stablehlo.subtract %arg2, %28 : tensor<2048x512xf32>
    %30 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<512xf32>
    %31 = stablehlo.multiply %30, %15 : tensor<512xf32>
    %32 = stablehlo.subtract %arg3, %31 : tensor<512xf32>
    return %23, %26, %29, %32, %11 : tensor<512x2048xf32>, tensor<2048xf32>, tensor<2048x512xf32>, tensor<512xf32>, tensor<f32>
  }
}

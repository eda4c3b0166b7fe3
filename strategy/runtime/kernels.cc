#include "strategy/runtime/kernels.h"

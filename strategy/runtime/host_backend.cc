#include "strategy/runtime/host_backend.h"

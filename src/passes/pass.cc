#include "passes/pass.h"

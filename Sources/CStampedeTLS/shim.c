// Every wrapper is `static inline` in the header; this file gives the target a source to build.
#include "CStampedeTLS.h"

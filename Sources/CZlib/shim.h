// zlib (Debian zlib1g-dev), found through pkg-config: compress2/uncompress for the zlib-deflated
// payload of HdrHistogram's V2 compressed histograms (Sources/StampedeReport/HistogramLogCodec.swift).
#ifndef C_ZLIB_SHIM_H
#define C_ZLIB_SHIM_H
#include <zlib.h>
#endif

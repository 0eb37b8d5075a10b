// PNG encoding of a Canvas: 8-bit RGB, no interlacing, zlib-compressed scanlines.
//
//   std::string png = EncodePng(canvas);
//   PCP_RETURN_IF_ERROR(WriteFileAtomic("loss.png", png));
#ifndef PCP_PLOT_PNG_H_
#define PCP_PLOT_PNG_H_

#include <string>

#include "absl/status/statusor.h"
#include "pcp/plot/canvas.h"

namespace pcp::plot {

// The PNG file's bytes. Fails only if zlib does (out of memory).
absl::StatusOr<std::string> EncodePng(const Canvas& canvas);

}  // namespace pcp::plot

#endif  // PCP_PLOT_PNG_H_

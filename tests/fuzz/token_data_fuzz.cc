// Training data and tokenizer metadata: token .bin files (nanoGPT's uint16), text corpora
// (character vocabulary) and saved tokenizers ("v1:char:..."). A tokenizer that loads
// serializes back to the same text.
#include "fuzz_target.h"
#include "pcp/training/dataset.h"
#include "pcp/training/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes = pcp::fuzz::AsText(data, size);
  (void)pcp::ParseTokenBin(bytes, "fuzz.bin");
  (void)pcp::Tokenizer::BuildChar(bytes);
  absl::StatusOr<pcp::Tokenizer> tokenizer = pcp::Tokenizer::Deserialize(bytes);
  if (tokenizer.ok()) {
    absl::StatusOr<pcp::Tokenizer> again = pcp::Tokenizer::Deserialize(tokenizer->Serialize());
    PCP_FUZZ_CHECK(again.ok());
    PCP_FUZZ_CHECK(again->Serialize() == tokenizer->Serialize());
  }
  return 0;
}

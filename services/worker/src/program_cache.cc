#include "pcp/worker/program_cache.h"

#include <chrono>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/file.h"
#include "pcp/base/sha256.h"
#include "pcp/base/status_macros.h"
#include "spdlog/spdlog.h"

namespace pcp::worker {
namespace {

constexpr char kPrefix[] = "sha256:";
constexpr char kSuffix[] = ".mlir";

bool IsHash(const std::string& h) {
  if (h.size() != 7 + 64 || h.rfind(kPrefix, 0) != 0) return false;
  for (size_t i = 7; i < h.size(); ++i) {
    const char c = h[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

ProgramCache::ProgramCache(Backend& backend, std::string dir) : backend_(backend), dir_(std::move(dir)) {
  if (dir_.empty()) return;
  absl::Status made = MakeDirs(dir_);
  if (!made.ok()) {
    spdlog::warn("program cache disabled: {}", made.message());
    dir_.clear();
  }
}

std::string ProgramCache::PathOf(const std::string& hash) const {
  return absl::StrCat(dir_, "/", hash.substr(7), kSuffix);
}

std::vector<std::string> ProgramCache::Hashes() const {
  std::vector<std::string> out;
  for (const Entry& e : compiled_) out.push_back(e.hash);
  for (const auto& [h, text] : texts_) out.push_back(h);
  if (!dir_.empty()) {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir_, ec)) {
      const std::string name = f.path().filename().string();
      if (name.size() != 64 + 5 || f.path().extension() != kSuffix) continue;
      const std::string h = absl::StrCat(kPrefix, name.substr(0, 64));
      if (IsHash(h) && !Has(h)) out.push_back(h);
    }
  }
  return out;
}

bool ProgramCache::Has(const std::string& hash) const {
  for (const Entry& e : compiled_) {
    if (e.hash == hash) return true;
  }
  return texts_.count(hash) > 0;
}

absl::Status ProgramCache::AddText(const std::string& hash, std::string text) {
  const std::string actual = Sha256ContentHash(text);
  if (actual != hash) {
    return absl::InvalidArgumentError(absl::StrCat("program text hashes to ", actual, ", announced as ", hash));
  }
  if (!dir_.empty()) {
    absl::Status s = WriteFileAtomic(PathOf(hash), text);
    if (!s.ok()) spdlog::warn("program cache: {}", s.message());
  }
  texts_[hash] = std::move(text);
  return absl::OkStatus();
}

absl::StatusOr<ProgramCache::Entry*> ProgramCache::Get(const std::string& hash) {
  for (auto it = compiled_.begin(); it != compiled_.end(); ++it) {
    if (it->hash == hash) {
      compiled_.splice(compiled_.begin(), compiled_, it);
      compiled_.front().compile_ms = 0;
      return &compiled_.front();
    }
  }
  std::string text;
  if (auto it = texts_.find(hash); it != texts_.end()) {
    text = std::move(it->second);
    texts_.erase(it);
  } else if (!dir_.empty() && IsHash(hash) && std::filesystem::exists(PathOf(hash))) {
    PCP_ASSIGN_OR_RETURN(text, ReadFile(PathOf(hash)));
    if (Sha256ContentHash(text) != hash) {
      std::error_code ec;
      std::filesystem::remove(PathOf(hash), ec);
      return absl::DataLossError(absl::StrCat("cached program ", PathOf(hash), " is corrupt (removed)"));
    }
  } else {
    return absl::NotFoundError(absl::StrCat("program ", hash, " is not cached"));
  }
  const auto t0 = std::chrono::steady_clock::now();
  PCP_ASSIGN_OR_RETURN(Module module, ParseModule(text, hash.substr(0, 19)));
  const Function* fn = module.Find("train_step");
  if (fn == nullptr && module.functions.size() == 1) fn = &module.functions[0];
  if (fn == nullptr) return absl::InvalidArgumentError(absl::StrCat("program ", hash, " has no train_step function"));
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<InnerLoop> loop, InnerLoop::Create(backend_, *fn));
  Entry entry;
  entry.hash = hash;
  entry.loop = std::move(loop);
  entry.compile_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  compiled_.push_front(std::move(entry));
  while (compiled_.size() > kMaxCompiled) compiled_.pop_back();
  return &compiled_.front();
}

}  // namespace pcp::worker

#include "pcp/testing/metrics_scrape.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace pcp::testing {

absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat(host, ": ", gai_strerror(rc)));
  }
  int fd = socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd < 0 || connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) close(fd);
    freeaddrinfo(found);
    return absl::UnavailableError(absl::StrCat("connecting to ", host, ":", port, ": ", why));
  }
  freeaddrinfo(found);
  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host, ":", port, "\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("sending the request failed");
  }
  std::string response;
  char buf[16384];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) {
      close(fd);
      return absl::DeadlineExceededError(absl::StrCat("no answer from ", host, ":", port, path));
    }
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  const size_t end = response.find("\r\n\r\n");
  if (end == std::string::npos) return absl::InternalError("malformed HTTP response");
  const std::string status_line = response.substr(0, response.find("\r\n"));
  if (status_line.find(" 200") == std::string::npos) {
    return absl::InternalError(absl::StrCat("GET ", path, ": ", status_line));
  }
  return response.substr(end + 4);
}

Samples ParseSamples(absl::string_view text) {
  Samples out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    double value = 0;
    absl::string_view number = line.substr(space + 1);
    if (number == "+Inf") {
      value = HUGE_VAL;
    } else if (number == "-Inf") {
      value = -HUGE_VAL;
    } else if (!absl::SimpleAtod(number, &value)) {
      continue;
    }
    out[std::string(absl::StripAsciiWhitespace(line.substr(0, space)))] = value;
  }
  return out;
}

std::string SeriesKey(absl::string_view name, std::vector<std::pair<std::string, std::string>> labels) {
  if (labels.empty()) return std::string(name);
  std::sort(labels.begin(), labels.end());
  std::string key = absl::StrCat(name, "{");
  for (size_t i = 0; i < labels.size(); ++i) {
    absl::StrAppend(&key, i ? "," : "", labels[i].first, "=\"", labels[i].second, "\"");
  }
  return key + "}";
}

std::optional<double> SampleValue(absl::string_view text, absl::string_view name,
                                  std::vector<std::pair<std::string, std::string>> labels) {
  Samples samples = ParseSamples(text);
  auto it = samples.find(SeriesKey(name, std::move(labels)));
  if (it == samples.end()) return std::nullopt;
  return it->second;
}

double SumSamples(absl::string_view text, absl::string_view name,
                  const std::vector<std::pair<std::string, std::string>>& labels) {
  double sum = 0;
  for (const auto& [key, value] : ParseSamples(text)) {
    absl::string_view k = key;
    if (!absl::ConsumePrefix(&k, name)) continue;
    if (!k.empty() && k.front() != '{') continue;  // another metric whose name starts alike
    const bool matches = std::all_of(labels.begin(), labels.end(), [&](const auto& label) {
      const std::string want = absl::StrCat(label.first, "=\"", label.second, "\"");
      return absl::StrContains(k, absl::StrCat("{", want)) || absl::StrContains(k, absl::StrCat(",", want));
    });
    if (matches) sum += value;
  }
  return sum;
}

}  // namespace pcp::testing

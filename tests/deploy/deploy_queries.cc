#include "deploy_queries.h"

#include <regex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "pcp/base/json.h"
#include "yaml-cpp/yaml.h"

namespace pcp::testing {
namespace {

std::string StringField(const Json& object, absl::string_view key) {
  const Json* v = object.Find(key);
  return v != nullptr && v->is_string() ? v->string_value() : "";
}

void CollectPanels(const Json& panels, std::vector<NamedQuery>* out) {
  if (!panels.is_array()) return;
  for (const Json& panel : panels.array_items()) {
    if (!panel.is_object()) continue;
    const std::string title = StringField(panel, "title");
    if (const Json* targets = panel.Find("targets"); targets != nullptr && targets->is_array()) {
      for (const Json& target : targets->array_items()) {
        if (!target.is_object()) continue;
        const std::string expr = StringField(target, "expr");
        if (expr.empty()) continue;
        out->push_back({absl::StrCat("panel '", title, "' target ", StringField(target, "refId")), expr});
      }
    }
    if (const Json* nested = panel.Find("panels"); nested != nullptr) CollectPanels(*nested, out);
  }
}

}  // namespace

absl::StatusOr<std::vector<NamedQuery>> DashboardQueries(absl::string_view dashboard_json) {
  absl::StatusOr<Json> doc = Json::Parse(dashboard_json);
  if (!doc.ok()) return doc.status();
  std::vector<NamedQuery> out;
  if (const Json* panels = doc->Find("panels"); panels != nullptr) CollectPanels(*panels, &out);
  const Json* templating = doc->Find("templating");
  const Json* list = templating != nullptr ? templating->Find("list") : nullptr;
  if (list != nullptr && list->is_array()) {
    for (const Json& variable : list->array_items()) {
      if (!variable.is_object() || StringField(variable, "type") != "query") continue;
      const Json* query = variable.Find("query");
      std::string text;
      if (query != nullptr && query->is_string()) text = query->string_value();
      if (query != nullptr && query->is_object()) text = StringField(*query, "query");
      if (!text.empty()) {
        out.push_back({absl::StrCat("variable ", StringField(variable, "name")), text, /*promql=*/false});
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<NamedQuery>> RuleQueries(absl::string_view rules_yaml) {
  std::vector<NamedQuery> out;
  try {
    YAML::Node doc = YAML::Load(std::string(rules_yaml));
    for (const YAML::Node& group : doc["groups"]) {
      for (const YAML::Node& rule : group["rules"]) {
        const std::string name = rule["alert"] ? rule["alert"].as<std::string>() : rule["record"].as<std::string>("?");
        out.push_back({absl::StrCat("rule ", name), rule["expr"].as<std::string>()});
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("rule file: ", e.what()));
  }
  return out;
}

std::string ExpandGrafanaVariables(absl::string_view expr) {
  std::string out = absl::StrReplaceAll(expr, {{"$__rate_interval", "1m"}, {"$__interval", "1m"}, {"$__range", "1h"}});
  static const std::regex kVariable(R"(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)");
  return std::regex_replace(out, kVariable, ".*");
}

}  // namespace pcp::testing

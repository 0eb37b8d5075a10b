// The shepherd's role table covers every method of every service it serves, and gives the
// roles issue 10 asks for: nodes stream, viewers read, admins do everything else.
#include "method_roles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"
#include "pcp/v1/admin.pb.h"
#include "pcp/v1/control.pb.h"
#include "pcp/v1/training.pb.h"

namespace pcp::shepherd {
namespace {

using auth::Role;

const auth::MethodRule* RuleFor(const google::protobuf::MethodDescriptor* m) {
  return auth::FindMethodRule(ShepherdMethodRules(), absl::StrCat("/", m->service()->full_name(), "/", m->name()));
}

TEST(MethodRolesTest, EveryMethodHasARowWithTheRolesOfItsKind) {
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  // Linked in, so their descriptors are in the pool.
  (void)v1::Job::descriptor();
  (void)v1::SupervisorHello::descriptor();
  (void)v1::Join::descriptor();
  for (const char* service : {"pcp.v1.Admin", "pcp.v1.Training", "pcp.v1.Control"}) {
    const google::protobuf::ServiceDescriptor* s = pool->FindServiceByName(service);
    ASSERT_NE(s, nullptr) << service;
    for (int i = 0; i < s->method_count(); ++i) {
      const auth::MethodRule* rule = RuleFor(s->method(i));
      ASSERT_NE(rule, nullptr) << s->method(i)->full_name() << " has no row in method_roles.cc";
      EXPECT_FALSE(rule->roles.empty()) << s->method(i)->full_name() << " must not be open";
      if (std::string(service) == "pcp.v1.Admin") {
        EXPECT_TRUE(rule->roles.Contains(Role::kAdmin)) << s->method(i)->full_name();
        EXPECT_FALSE(rule->roles.Contains(Role::kNode)) << s->method(i)->full_name();
        // A mutation (audited) is admin only; reads admit viewers.
        if (rule->audit == auth::Audit::kYes) {
          EXPECT_FALSE(rule->roles.Contains(Role::kViewer)) << s->method(i)->full_name();
        }
      } else {
        EXPECT_EQ(rule->roles, auth::RoleSet{Role::kNode}) << s->method(i)->full_name();
      }
    }
  }
  for (const char* m : {"/pcp.v1.Admin/SubmitJob", "/pcp.v1.Admin/CancelJob", "/pcp.v1.Admin/RestartWorker",
                        "/pcp.v1.Admin/DrainWorker"}) {
    EXPECT_EQ(auth::FindMethodRule(ShepherdMethodRules(), m)->audit, auth::Audit::kYes) << m;
  }
  EXPECT_FALSE(auth::FindMethodRule(ShepherdMethodRules(), "/pcp.v1.Admin/Sample")->roles.Contains(Role::kViewer));
  EXPECT_TRUE(auth::FindMethodRule(ShepherdMethodRules(), "/grpc.health.v1.Health/Check")->roles.empty());
  EXPECT_TRUE(
      auth::FindMethodRule(ShepherdMethodRules(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
          ->roles.empty());
}

}  // namespace
}  // namespace pcp::shepherd

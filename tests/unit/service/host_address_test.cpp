#include "service/host_address.h"

#include <gtest/gtest.h>

namespace tern::service {
namespace {

std::string address_of(const std::string& host) {
  const auto resolved = resolve_host(host);
  return resolved.ok() ? *resolved : "error: " + resolved.error().message;
}

TEST(HostAddress, IpAddressesStayAsWritten) {
  EXPECT_EQ(address_of("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(address_of("0.0.0.0"), "0.0.0.0");
  EXPECT_EQ(address_of("::1"), "::1");
}

TEST(HostAddress, LocalhostListensWhereIpv4ClientsConnect) {
  EXPECT_EQ(address_of("localhost"), "127.0.0.1");
}

TEST(HostAddress, UnknownNameIsAnError) {
  const auto resolved = resolve_host("not-an-ip.invalid");
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().message.rfind(
                "'not-an-ip.invalid' is not an IP address and does not resolve: ", 0),
            0u)
      << resolved.error().message;
}

}  // namespace
}  // namespace tern::service

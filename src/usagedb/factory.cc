#include <cstdlib>

#include "usagedb/client.h"
#include "usagedb/embedded_store.h"
#include "usagedb/prometheus_client.h"

namespace gantry::usagedb {

Result<std::unique_ptr<UsageClient>> MakeUsageClient(const UsageDbConfig& config) {
  std::optional<CronSchedule> cron;
  if (config.usage_params.window_type == UsageParams::WindowType::kCron) {
    auto parsed = CronSchedule::Parse(config.usage_params.cron_string);
    if (!parsed.ok()) return Error{"usageDBConfig.usageParams.cronString: " + parsed.error()};
    cron = parsed.value();
  }
  if (config.client_type == "embedded") {
    return std::unique_ptr<UsageClient>(
        std::make_unique<EmbeddedUsageStore>(config.usage_params, cron));
  }
  if (config.client_type == "prometheus") {
    std::string address = config.connection_string;
    if (!config.connection_string_env_var.empty()) {
      const char* v = std::getenv(config.connection_string_env_var.c_str());
      if (v == nullptr || *v == '\0') {
        return Error{"usageDBConfig.connectionStringEnvVar: environment variable " +
                     config.connection_string_env_var + " is not set"};
      }
      address = v;
    }
    auto client = PrometheusClient::Create(address, config.usage_params);
    if (!client.ok()) return Error{client.error()};
    return std::unique_ptr<UsageClient>(std::move(client).value());
  }
  return Error{"usageDBConfig.clientType: unknown client type \"" + config.client_type +
               "\", supported types: [embedded prometheus]"};
}

}  // namespace gantry::usagedb

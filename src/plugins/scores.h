// Node-order score weights (KAI's plugins/scores): a higher tier always outweighs every lower one.
#pragma once

namespace gantry::scores {
inline constexpr double kMaxHighDensity = 9;
inline constexpr double kResourceType = 10;
inline constexpr double kAvailability = 100;
inline constexpr double kGpuSharing = 1000;
inline constexpr double kTopology = 10000;
inline constexpr double kK8sPlugins = 100000;
inline constexpr double kNominatedNode = 1000000;
}  // namespace gantry::scores

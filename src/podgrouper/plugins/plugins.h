// The built-in grouping plugins: one file each, one Register function each (called by hub.cc).
#pragma once

#include "podgrouper/grouper.h"

namespace gantry::podgrouper {

void RegisterDefaultKinds(Hub& hub);  // kinds KAI groups with the default grouper
void RegisterPodJob(Hub& hub);        // bare pods (and Spark driver/executor pods)
void RegisterJob(Hub& hub);
void RegisterCronJob(Hub& hub);
void RegisterDeployment(Hub& hub);
void RegisterPyTorchJob(Hub& hub);
void RegisterTFJob(Hub& hub);
void RegisterXGBoostJob(Hub& hub);
void RegisterJAXJob(Hub& hub);
void RegisterMPIJob(Hub& hub);
void RegisterNotebook(Hub& hub);
void RegisterRay(Hub& hub);
void RegisterJobSet(Hub& hub);
void RegisterLeaderWorkerSet(Hub& hub);
void RegisterKnative(Hub& hub);
void RegisterAml(Hub& hub);
void RegisterSpotRequest(Hub& hub);
void RegisterRunaiJob(Hub& hub);
void RegisterGrove(Hub& hub);  // grove.io PodCliqueSet / PodGangSet (through the PodGang)
// Last: it delegates to the plugins registered before it.
void RegisterSkipTopOwner(Hub& hub);
// Not a kind: the hub's fallback for kinds without a plugin (--generic-karta-fallback).
void RegisterKartaFallback(Hub& hub);

}  // namespace gantry::podgrouper

-- Argo CD health check for faros Providers (admin.faros.sh/v1alpha1, kind Provider), for
-- `resource.customizations.health.admin.faros.sh_Provider` in argocd-cm. Providers report kstatus
-- conditions: `Ready` with a reason, and `observedGeneration`.
--   Healthy:     Ready=True for the current generation (workspace, token and kubeconfig Secret made).
--   Progressing: no status yet, a newer generation not yet observed, Ready Unknown, or being deleted.
--   Degraded:    Ready=False: the reconciler retries, and the reason and message say what fails.
local hs = {}
local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the reconciler"
  return hs
end
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Being deleted: the reconciler tears down the provider workspace"
  return hs
end
local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the reconciler to observe generation " .. tostring(generation)
  return hs
end
local ready = nil
for _, condition in ipairs(status.conditions or {}) do
  if condition.type == "Ready" then
    ready = condition
  end
end
if ready == nil or ready.status == "Unknown" then
  hs.status = "Progressing"
  hs.message = (ready and ready.message) or "Waiting for the Ready condition"
  return hs
end
local message = ready.message or ""
if ready.reason ~= nil and ready.reason ~= "" then
  message = ready.reason .. ": " .. message
end
if ready.status == "True" then
  hs.status = "Healthy"
elseif ready.reason == "Deleting" then
  hs.status = "Progressing"
else
  hs.status = "Degraded"
end
hs.message = message
return hs

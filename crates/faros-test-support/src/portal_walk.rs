//! The portal browser walk's fixture (`e2e/browser/portal.test.mjs`): the admin-registered
//! providers whose states the walk visits, for every test that runs the walk (against one hub or
//! behind a balancer).

/// CatalogEntries for `root:faros:system:providers`: a UI that never defines its element (served
/// by the test's side server on `side_port`), a UI server that is down, an unhealthy backend, a
/// provider blocked by a dependency (and reaching edges, claiming Secrets), and one whose export
/// does not exist.
pub fn admin_providers(side_port: u16) -> String {
    format!(
        r#"apiVersion: providers.faros.sh/v1alpha1
kind: CatalogEntry
metadata: {{name: neverdefines}}
spec:
  displayName: Never Defines
  description: Its UI loads but never defines its element.
  category: Testing
  ui: {{url: "http://127.0.0.1:{side_port}"}}
---
apiVersion: providers.faros.sh/v1alpha1
kind: CatalogEntry
metadata: {{name: unreachable}}
spec:
  displayName: Unreachable
  description: Its UI server is down.
  category: Testing
  ui: {{url: "http://127.0.0.1:9"}}
---
apiVersion: providers.faros.sh/v1alpha1
kind: CatalogEntry
metadata: {{name: unhealthy}}
spec:
  displayName: Unhealthy
  description: Its backend never answers its health check.
  category: Testing
  backend: {{url: "http://127.0.0.1:9"}}
---
apiVersion: providers.faros.sh/v1alpha1
kind: CatalogEntry
metadata: {{name: dependent}}
spec:
  displayName: Dependent
  description: Needs quickstart, reaches edges, and claims secrets beyond the tenant.
  category: Testing
  dependencies: [{{name: quickstart}}]
  edgeProxyAccess: true
  apiExport:
    name: dependent.example.dev
    permissionClaims:
      - {{resource: secrets, verbs: [get, list]}}
---
apiVersion: providers.faros.sh/v1alpha1
kind: CatalogEntry
metadata: {{name: noaccess}}
spec:
  displayName: No Access
  description: Binds an export that does not exist and claims nothing.
  category: Testing
  apiExport: {{name: noaccess.example.dev}}
"#
    )
}

//! The protobuf messages of every built-in kind the server serves and of the meta types Go
//! clients exchange with it (`DeleteOptions`, `Status`, lists, `WatchEvent`).
//!
//! Each message is a table of `(field number, JSON name, shape)`; the numbers are those of
//! k8s.io/api's and k8s.io/apimachinery's `generated.proto`. A JSON field missing from a table
//! cannot be encoded (the response then stays JSON), so a table must list every field the
//! server's schema for that kind keeps.

/// The fields of one message.
pub type Fields = &'static [(u64, &'static str, Shape)];

/// How a field is represented on the wire and in JSON.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    Str,
    Bool,
    /// `int32`/`int64` (varint; negatives sign-extended).
    Int,
    RepeatedStr,
    Msg(Fields),
    RepeatedMsg(Fields),
    /// `map<string, string>`.
    MapStr,
    /// `map<string, bytes>`, base64 values in JSON.
    MapBytes,
    /// `map<string, ExtraValue>` with `ExtraValue { repeated string items = 1 }`, a plain string
    /// array in JSON.
    ExtraMap,
    /// `meta.v1.Time`: `seconds` = 1, `nanos` = 2; RFC 3339 with seconds in JSON.
    Time,
    /// `meta.v1.MicroTime`: as `Time`, with microseconds in JSON.
    MicroTime,
    /// `meta.v1.FieldsV1`: `Raw` = 1 holds the JSON text of the managed fields set.
    FieldsV1,
}

use Shape::*;

pub const OWNER_REFERENCE: Fields = &[
    (1, "kind", Str),
    (3, "name", Str),
    (4, "uid", Str),
    (5, "apiVersion", Str),
    (6, "controller", Bool),
    (7, "blockOwnerDeletion", Bool),
];
pub const MANAGED_FIELDS_ENTRY: Fields = &[
    (1, "manager", Str),
    (2, "operation", Str),
    (3, "apiVersion", Str),
    (4, "time", Time),
    (6, "fieldsType", Str),
    (7, "fieldsV1", FieldsV1),
    (8, "subresource", Str),
];
pub const OBJECT_META: Fields = &[
    (1, "name", Str),
    (2, "generateName", Str),
    (3, "namespace", Str),
    (4, "selfLink", Str),
    (5, "uid", Str),
    (6, "resourceVersion", Str),
    (7, "generation", Int),
    (8, "creationTimestamp", Time),
    (9, "deletionTimestamp", Time),
    (10, "deletionGracePeriodSeconds", Int),
    (11, "labels", MapStr),
    (12, "annotations", MapStr),
    (13, "ownerReferences", RepeatedMsg(OWNER_REFERENCE)),
    (14, "finalizers", RepeatedStr),
    (17, "managedFields", RepeatedMsg(MANAGED_FIELDS_ENTRY)),
];
pub const LIST_META: Fields = &[
    (1, "selfLink", Str),
    (2, "resourceVersion", Str),
    (3, "continue", Str),
    (4, "remainingItemCount", Int),
];
/// A list's own fields; its `items` (= 2) are messages of the item kind.
pub const LIST: Fields = &[(1, "metadata", Msg(LIST_META))];
const META: (u64, &str, Shape) = (1, "metadata", Msg(OBJECT_META));

const STATUS_CAUSE: Fields = &[(1, "reason", Str), (2, "message", Str), (3, "field", Str)];
const STATUS_DETAILS: Fields = &[
    (1, "name", Str),
    (2, "group", Str),
    (3, "kind", Str),
    (4, "causes", RepeatedMsg(STATUS_CAUSE)),
    (5, "retryAfterSeconds", Int),
    (6, "uid", Str),
];
pub const STATUS: Fields = &[
    (1, "metadata", Msg(LIST_META)),
    (2, "status", Str),
    (3, "message", Str),
    (4, "reason", Str),
    (5, "details", Msg(STATUS_DETAILS)),
    (6, "code", Int),
];
const PRECONDITIONS: Fields = &[(1, "uid", Str), (2, "resourceVersion", Str)];
pub const DELETE_OPTIONS: Fields = &[
    (1, "gracePeriodSeconds", Int),
    (2, "preconditions", Msg(PRECONDITIONS)),
    (3, "orphanDependents", Bool),
    (4, "propagationPolicy", Str),
    (5, "dryRun", RepeatedStr),
    (6, "ignoreStoreReadErrorWithClusterBreakingPotential", Bool),
];

const SELECTOR_REQUIREMENT: Fields = &[(1, "key", Str), (2, "operator", Str), (3, "values", RepeatedStr)];
const LABEL_SELECTOR: Fields = &[
    (1, "matchLabels", MapStr),
    (2, "matchExpressions", RepeatedMsg(SELECTOR_REQUIREMENT)),
];
const OBJECT_REFERENCE: Fields = &[
    (1, "kind", Str),
    (2, "namespace", Str),
    (3, "name", Str),
    (4, "uid", Str),
    (5, "apiVersion", Str),
    (6, "resourceVersion", Str),
    (7, "fieldPath", Str),
];
const LOCAL_OBJECT_REFERENCE: Fields = &[(1, "name", Str)];

// core/v1
const NAMESPACE_CONDITION: Fields = &[
    (1, "type", Str),
    (2, "status", Str),
    (4, "lastTransitionTime", Time),
    (5, "reason", Str),
    (6, "message", Str),
];
const NAMESPACE: Fields = &[
    META,
    (2, "spec", Msg(&[(1, "finalizers", RepeatedStr)])),
    (
        3,
        "status",
        Msg(&[(1, "phase", Str), (2, "conditions", RepeatedMsg(NAMESPACE_CONDITION))]),
    ),
];
const CONFIG_MAP: Fields = &[
    META,
    (2, "data", MapStr),
    (3, "binaryData", MapBytes),
    (4, "immutable", Bool),
];
const SECRET: Fields = &[
    META,
    (2, "data", MapBytes),
    (3, "type", Str),
    (4, "stringData", MapStr),
    (5, "immutable", Bool),
];
const SERVICE_ACCOUNT: Fields = &[
    META,
    (2, "secrets", RepeatedMsg(OBJECT_REFERENCE)),
    (3, "imagePullSecrets", RepeatedMsg(LOCAL_OBJECT_REFERENCE)),
    (4, "automountServiceAccountToken", Bool),
];
const EVENT_SOURCE: Fields = &[(1, "component", Str), (2, "host", Str)];
const EVENT_SERIES: Fields = &[(1, "count", Int), (2, "lastObservedTime", MicroTime)];
const CORE_EVENT: Fields = &[
    META,
    (2, "involvedObject", Msg(OBJECT_REFERENCE)),
    (3, "reason", Str),
    (4, "message", Str),
    (5, "source", Msg(EVENT_SOURCE)),
    (6, "firstTimestamp", Time),
    (7, "lastTimestamp", Time),
    (8, "count", Int),
    (9, "type", Str),
    (10, "eventTime", MicroTime),
    (11, "series", Msg(EVENT_SERIES)),
    (12, "action", Str),
    (13, "related", Msg(OBJECT_REFERENCE)),
    (14, "reportingComponent", Str),
    (15, "reportingInstance", Str),
];
// events.k8s.io/v1
const EVENTS_EVENT: Fields = &[
    META,
    (2, "eventTime", MicroTime),
    (3, "series", Msg(EVENT_SERIES)),
    (4, "reportingController", Str),
    (5, "reportingInstance", Str),
    (6, "action", Str),
    (7, "reason", Str),
    (8, "regarding", Msg(OBJECT_REFERENCE)),
    (9, "related", Msg(OBJECT_REFERENCE)),
    (10, "note", Str),
    (11, "type", Str),
    (12, "deprecatedSource", Msg(EVENT_SOURCE)),
    (13, "deprecatedFirstTimestamp", Time),
    (14, "deprecatedLastTimestamp", Time),
    (15, "deprecatedCount", Int),
];
// coordination.k8s.io/v1
const LEASE_SPEC: Fields = &[
    (1, "holderIdentity", Str),
    (2, "leaseDurationSeconds", Int),
    (3, "acquireTime", MicroTime),
    (4, "renewTime", MicroTime),
    (5, "leaseTransitions", Int),
    (6, "strategy", Str),
    (7, "preferredHolder", Str),
];
const LEASE: Fields = &[META, (2, "spec", Msg(LEASE_SPEC))];
// rbac.authorization.k8s.io/v1
const POLICY_RULE: Fields = &[
    (1, "verbs", RepeatedStr),
    (2, "apiGroups", RepeatedStr),
    (3, "resources", RepeatedStr),
    (4, "resourceNames", RepeatedStr),
    (5, "nonResourceURLs", RepeatedStr),
];
const SUBJECT: Fields = &[
    (1, "kind", Str),
    (2, "apiGroup", Str),
    (3, "name", Str),
    (4, "namespace", Str),
];
const ROLE_REF: Fields = &[(1, "apiGroup", Str), (2, "kind", Str), (3, "name", Str)];
const ROLE: Fields = &[META, (2, "rules", RepeatedMsg(POLICY_RULE))];
const CLUSTER_ROLE: Fields = &[
    META,
    (2, "rules", RepeatedMsg(POLICY_RULE)),
    (
        3,
        "aggregationRule",
        Msg(&[(1, "clusterRoleSelectors", RepeatedMsg(LABEL_SELECTOR))]),
    ),
];
const BINDING: Fields = &[
    META,
    (2, "subjects", RepeatedMsg(SUBJECT)),
    (3, "roleRef", Msg(ROLE_REF)),
];
// authentication.k8s.io/v1
const USER_INFO: Fields = &[
    (1, "username", Str),
    (2, "uid", Str),
    (3, "groups", RepeatedStr),
    (4, "extra", ExtraMap),
];
const TOKEN_REVIEW: Fields = &[
    META,
    (2, "spec", Msg(&[(1, "token", Str), (2, "audiences", RepeatedStr)])),
    (
        3,
        "status",
        Msg(&[
            (1, "authenticated", Bool),
            (2, "user", Msg(USER_INFO)),
            (3, "error", Str),
            (4, "audiences", RepeatedStr),
        ]),
    ),
];
// authorization.k8s.io/v1
const SELECTOR_ATTRIBUTES: Fields = &[
    (1, "rawSelector", Str),
    (2, "requirements", RepeatedMsg(SELECTOR_REQUIREMENT)),
];
const RESOURCE_ATTRIBUTES: Fields = &[
    (1, "namespace", Str),
    (2, "verb", Str),
    (3, "group", Str),
    (4, "version", Str),
    (5, "resource", Str),
    (6, "subresource", Str),
    (7, "name", Str),
    (8, "fieldSelector", Msg(SELECTOR_ATTRIBUTES)),
    (9, "labelSelector", Msg(SELECTOR_ATTRIBUTES)),
];
const NON_RESOURCE_ATTRIBUTES: Fields = &[(1, "path", Str), (2, "verb", Str)];
const ACCESS_REVIEW_STATUS: Fields = &[
    (1, "allowed", Bool),
    (2, "reason", Str),
    (3, "evaluationError", Str),
    (4, "denied", Bool),
];
const SUBJECT_ACCESS_REVIEW: Fields = &[
    META,
    (
        2,
        "spec",
        Msg(&[
            (1, "resourceAttributes", Msg(RESOURCE_ATTRIBUTES)),
            (2, "nonResourceAttributes", Msg(NON_RESOURCE_ATTRIBUTES)),
            (3, "user", Str),
            (4, "groups", RepeatedStr),
            (5, "extra", ExtraMap),
            (6, "uid", Str),
        ]),
    ),
    (3, "status", Msg(ACCESS_REVIEW_STATUS)),
];
const SELF_SUBJECT_ACCESS_REVIEW: Fields = &[
    META,
    (
        2,
        "spec",
        Msg(&[
            (1, "resourceAttributes", Msg(RESOURCE_ATTRIBUTES)),
            (2, "nonResourceAttributes", Msg(NON_RESOURCE_ATTRIBUTES)),
        ]),
    ),
    (3, "status", Msg(ACCESS_REVIEW_STATUS)),
];

const SELF_SUBJECT_REVIEW: Fields = &[META, (2, "status", Msg(&[(1, "userInfo", Msg(USER_INFO))]))];
const RESOURCE_RULE: Fields = &[
    (1, "verbs", RepeatedStr),
    (2, "apiGroups", RepeatedStr),
    (3, "resources", RepeatedStr),
    (4, "resourceNames", RepeatedStr),
];
const NON_RESOURCE_RULE: Fields = &[(1, "verbs", RepeatedStr), (2, "nonResourceURLs", RepeatedStr)];
const SELF_SUBJECT_RULES_REVIEW: Fields = &[
    META,
    (2, "spec", Msg(&[(1, "namespace", Str)])),
    (
        3,
        "status",
        Msg(&[
            (1, "resourceRules", RepeatedMsg(RESOURCE_RULE)),
            (2, "nonResourceRules", RepeatedMsg(NON_RESOURCE_RULE)),
            (3, "incomplete", Bool),
            (4, "evaluationError", Str),
        ]),
    ),
];

/// Every `(apiVersion, kind)` served as a built-in resource, with its message.
pub const KINDS: &[(&str, &str, Fields)] = &[
    ("v1", "Namespace", NAMESPACE),
    ("v1", "ConfigMap", CONFIG_MAP),
    ("v1", "Secret", SECRET),
    ("v1", "ServiceAccount", SERVICE_ACCOUNT),
    ("v1", "Event", CORE_EVENT),
    ("events.k8s.io/v1", "Event", EVENTS_EVENT),
    ("coordination.k8s.io/v1", "Lease", LEASE),
    ("rbac.authorization.k8s.io/v1", "Role", ROLE),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", BINDING),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", CLUSTER_ROLE),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", BINDING),
    ("authentication.k8s.io/v1", "TokenReview", TOKEN_REVIEW),
    ("authorization.k8s.io/v1", "SubjectAccessReview", SUBJECT_ACCESS_REVIEW),
    (
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        SUBJECT_ACCESS_REVIEW,
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        SELF_SUBJECT_ACCESS_REVIEW,
    ),
    // `kubectl auth whoami` and `kubectl auth can-i --list` send these as protobuf.
    ("authentication.k8s.io/v1", "SelfSubjectReview", SELF_SUBJECT_REVIEW),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        SELF_SUBJECT_RULES_REVIEW,
    ),
];

/// The message of a built-in kind.
pub fn kind(api_version: &str, kind: &str) -> Option<Fields> {
    KINDS
        .iter()
        .find(|(v, k, _)| *v == api_version && *k == kind)
        .map(|(_, _, f)| *f)
}

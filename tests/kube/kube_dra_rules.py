"""kube-apiserver's own checks of resource.k8s.io/v1 objects.

  rules = DraRules(kube_minor=35)
  errs = rules.check_slice(obj, old)          # ResourceSlice create/update
  errs = rules.check_claim(obj, old)          # ResourceClaim (main resource)
  errs = rules.check_claim_status(obj, old)   # ResourceClaim /status
  errs = rules.check_class(obj, old)          # DeviceClass

The rules of pkg/apis/resource/validation that span fields, for the release
given by kube_minor (34, 35 or 36): kube_slice_rules and kube_claim_rules
hold them; kube_dra_common.field_rules(kube_minor) holds those of one field,
checked with the schema. old is the stored object on update (None on
create). Each method returns a list of kube_fields.FieldError; the object is
not changed. Safe from any thread.
"""

from kube_claim_rules import ClaimRules
from kube_slice_rules import SliceRules


class DraRules(SliceRules, ClaimRules):
  """The checks of one Kubernetes minor release (34, 35 or 36)."""

  def __init__(self, kube_minor):
    SliceRules.__init__(self, kube_minor)
    ClaimRules.__init__(self, kube_minor)

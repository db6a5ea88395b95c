"""kube-apiserver's own checks of resource.k8s.io/v1 objects.

  rules = DraRules(kube_minor=35)
  errs = rules.check_slice(obj, old)          # ResourceSlice create/update
  errs = rules.check_claim(obj, old)          # ResourceClaim (main resource)
  errs = rules.check_claim_status(obj, old)   # ResourceClaim /status
  errs = rules.check_class(obj, old)          # DeviceClass

The rules follow pkg/apis/resource/validation in kubernetes/kubernetes for
the release given by kube_minor (34, 35 or 36); kube_slice_rules and
kube_claim_rules hold them. old is the stored object on update (None on
create); immutable fields are checked against it. Values of the wrong JSON
type are skipped (the schema check reports them). Each method returns a
list of kube_fields.FieldError; the object is not changed. Safe from any
thread.
"""

from kube_claim_rules import ClaimRules
from kube_slice_rules import SliceRules


class DraRules:
  """The checks of one Kubernetes minor release (34, 35 or 36)."""

  def __init__(self, kube_minor):
    self.minor = kube_minor
    self._slices = SliceRules(kube_minor)
    self._claims = ClaimRules(kube_minor)

  def check_slice(self, obj, old):
    """See SliceRules.check_slice."""
    return self._slices.check_slice(obj, old)

  def check_claim(self, obj, old):
    """See ClaimRules.check_claim."""
    return self._claims.check_claim(obj, old)

  def check_claim_status(self, obj, old):
    """See ClaimRules.check_claim_status."""
    return self._claims.check_claim_status(obj, old)

  def check_class(self, obj, old):
    """See ClaimRules.check_class."""
    return self._claims.check_class(obj, old)

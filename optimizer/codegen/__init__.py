"""Code generation: a plan document -> a specialized C++ build in generated/<name>/.

document.py reads and validates plan documents, derive.py computes the constants the header
spells out, rendering.py renders the templates and writes the files. The names below are the
package's public face.
"""

from spiralpir.optimizer.codegen.derive import Derived, derive, gadget_bits, min_root_2n, q2_prime
from spiralpir.optimizer.codegen.document import (
    canonical_json,
    load_document,
    normalize_params,
    parse_plan_document,
    struct_fields,
)
from spiralpir.optimizer.codegen.rendering import (
    DEFAULT_OUT,
    GENERATOR_VERSION,
    NAME_RE,
    TEMPLATE_FILES,
    generate,
    generate_from_document,
    render,
    reproduce_command,
    write_atomic,
)
from spiralpir.optimizer.models.security import security_report
from spiralpir.optimizer.params.ci_twin import ci_literal, ci_shape

__all__ = [
    "DEFAULT_OUT", "GENERATOR_VERSION", "NAME_RE", "TEMPLATE_FILES", "Derived", "canonical_json",
    "ci_literal", "ci_shape", "derive", "gadget_bits", "generate", "generate_from_document",
    "load_document", "min_root_2n", "normalize_params", "parse_plan_document", "q2_prime",
    "render", "reproduce_command", "security_report", "struct_fields", "write_atomic",
]

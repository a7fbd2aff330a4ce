"""Custom resources checked with kubectl: the CRD's schema is enforced as a
real API server enforces it (kubectl shows the server's own message), `get`
prints the CRD's printer columns, and `explain` reads the published
schema."""

import json
import textwrap

CRD = textwrap.dedent(
    """
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: gadgets.example.com
    spec:
      group: example.com
      scope: Namespaced
      names:
        plural: gadgets
        singular: gadget
        kind: Gadget
        shortNames: [gd]
      versions:
      - name: v1
        served: true
        storage: true
        additionalPrinterColumns:
        - name: Color
          type: string
          jsonPath: .spec.color
        - name: Replicas
          type: integer
          jsonPath: .spec.replicas
        - name: Created
          type: date
          jsonPath: .metadata.creationTimestamp
        schema:
          openAPIV3Schema:
            type: object
            description: A Gadget is a test kind.
            properties:
              spec:
                type: object
                description: What the gadget should be.
                required: [color]
                properties:
                  color:
                    type: string
                    description: The colour of the gadget.
                    enum: [red, blue]
                  replicas:
                    type: integer
                    minimum: 1
                    default: 1
    """
)


def gadget(name, spec):
    body = "\n".join(f"  {line}" for line in spec.strip().splitlines())
    return f"apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n{body}\n"


def install(kubectl):
    out = kubectl("apply", "-f", "-", input=CRD).stdout
    assert "customresourcedefinition.apiextensions.k8s.io/gadgets.example.com created" in out


def test_apply_of_an_invalid_custom_resource_is_refused_with_the_servers_message(kubectl):
    install(kubectl)
    p = kubectl("apply", "-f", "-", input=gadget("bad", "color: pink\nreplicas: many"), check=False)
    assert p.returncode != 0
    # Two causes: kubectl lists them under the server's kind and name (the
    # order of causes is not fixed by the real server).
    assert 'The Gadget "bad" is invalid: \n* ' in p.stderr, p.stderr
    causes = [line[2:] for line in p.stderr.splitlines() if line.startswith("* ")]
    assert sorted(causes) == [
        'spec.color: Unsupported value: "pink": supported values: "red", "blue"',
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
    ], p.stderr
    p = kubectl("apply", "-f", "-", input=gadget("bad", "replicas: 2"), check=False)
    assert p.returncode != 0
    assert 'The Gadget "bad" is invalid: spec.color: Required value' in p.stderr, p.stderr
    # kubectl validates strictly: an unknown field is refused by the server.
    p = kubectl("apply", "-f", "-", input=gadget("bad", "color: red\nshape: round"), check=False)
    assert p.returncode != 0
    assert 'strict decoding error: unknown field "spec.shape"' in p.stderr, p.stderr
    p = kubectl("get", "gadgets", "-o", "name", check=False)
    assert p.stdout.strip() == "", p.stdout


def test_get_prints_the_declared_columns_and_defaults_are_applied(kubectl):
    install(kubectl)
    out = kubectl("apply", "-f", "-", input=gadget("g1", "color: blue")).stdout
    assert "gadget.example.com/g1 created" in out
    g = json.loads(kubectl("get", "gadget", "g1", "-o", "json").stdout)
    assert g["spec"]["replicas"] == 1
    lines = kubectl("get", "gadgets").stdout.splitlines()
    assert lines[0].split() == ["NAME", "COLOR", "REPLICAS", "CREATED"], lines
    cells = lines[1].split()
    assert cells[:3] == ["g1", "blue", "1"], lines
    # The date column is an age, not a timestamp.
    assert cells[3][-1] in "smhd" and "T" not in cells[3], lines


def test_explain_reads_the_published_schema(kubectl):
    install(kubectl)
    out = kubectl("explain", "gadget.spec").stdout
    assert "KIND:" in out and "Gadget" in out, out
    assert "What the gadget should be." in out, out
    assert "color" in out and "The colour of the gadget." in out, out
    out = kubectl("explain", "gadgets.spec.color").stdout
    assert "The colour of the gadget." in out, out

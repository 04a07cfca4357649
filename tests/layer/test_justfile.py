"""The justfile text reader: recipe lines, parameters, doc comments, attributes, aliases, what it skips."""

from __future__ import annotations

from svc.layer._env_model import WorkflowDescriptor, WorkflowParameter
from svc.layer._justfile import read_justfile

JUSTFILE = """\
set shell := ["bash", "-cu"]
set dotenv-load

version := "1.2"
export TARGET := 'web'
url := if os() == "linux" {
  "a:b"
} else { "c" }

# Build the site into public/
[group('site')]
site:
    echo building {{version}}

[confirm("Really remove everything?")]
# Remove everything the build wrote
clean: site
    rm -rf public

# Deploy one environment
[group: 'site', no-cd]
@deploy env target='web:1' *flags: (site)
    echo {{env}} {{target}} {{flags}}

publish +files $api_token="" level=(version + "x"):
    echo {{files}}

# an orphan comment

alias d := deploy
[private]
alias p := publish
alias gone := nowhere

[private]
helper:
    true

_hidden:
    true

[doc('Lint every file')]
# overridden by the doc attribute
lint:
    #!/usr/bin/env bash
    # a comment inside the body
    ruff check .

site:
    echo the second definition replaces the first
"""


def test_recipes_their_parameters_docs_and_attributes_are_read() -> None:
    reading = read_justfile(JUSTFILE)
    assert reading.recipes == (
        WorkflowDescriptor(
            name="clean", description="Remove everything the build wrote", group=None, parameters=(), confirm=True
        ),
        WorkflowDescriptor(
            name="deploy",
            description="Deploy one environment",
            group="site",
            parameters=(
                WorkflowParameter(name="env", variadic=False, required=True),
                WorkflowParameter(name="target", variadic=False, required=False),
                WorkflowParameter(name="flags", variadic=True, required=False),
            ),
            confirm=False,
        ),
        WorkflowDescriptor(name="lint", description="Lint every file", parameters=(), confirm=False),
        WorkflowDescriptor(
            name="publish",
            description=None,
            parameters=(
                WorkflowParameter(name="files", variadic=True, required=True),
                WorkflowParameter(name="api_token", variadic=False, required=False),
                WorkflowParameter(name="level", variadic=False, required=False),
            ),
            confirm=False,
        ),
        WorkflowDescriptor(name="site", description=None, parameters=(), confirm=False),
    )


def test_private_recipes_are_named_but_not_listed_and_aliases_map_to_their_recipe() -> None:
    reading = read_justfile(JUSTFILE)
    assert reading.names == {"site", "clean", "deploy", "publish", "helper", "_hidden", "lint"}
    assert reading.aliases == {"d": "deploy", "gone": "nowhere"}


def test_settings_assignments_and_lines_it_cannot_name_are_skipped() -> None:
    text = "set x := true\nfoo := 'a'\nnot a recipe ( line\n[unterminated\n\ndone:\n"
    reading = read_justfile(text)
    assert [r.name for r in reading.recipes] == ["done"]
    assert reading.names == {"done"}


def test_a_blank_line_separates_a_comment_from_the_recipe() -> None:
    reading = read_justfile("# not a doc\n\nbuild:\n    true\n")
    assert reading.recipes[0].description is None


def test_recipes_are_in_natural_order() -> None:
    reading = read_justfile("step10:\nstep2:\nStep1:\n")
    assert [r.name for r in reading.recipes] == ["Step1", "step2", "step10"]


def test_a_recipe_line_with_a_broken_default_is_not_a_recipe() -> None:
    assert read_justfile("broken a='x:\n").recipes == ()
    assert read_justfile("broken a=(x:\n").recipes == ()

"""The ``azure-pipelines.yml`` ``retrieval-gate init --ci azure`` writes (``AzureDevOps.pipeline``). Pure.

Two jobs in the retrieval-gate image pinned by its registry digest (a container job), both running
the CI entry point (``retrieval-gate action``, which reads Azure Pipelines' predefined variables):

- ``retrieval`` evaluates and holds no token that can push: on a pull request it is judged by the
  files at the PR's target commit (through the REST API), posts one thread with
  ``$(System.AccessToken)`` (the build service: *Contribute to pull requests* only) and publishes
  the JUnit file to the Tests tab (``PublishTestResults@2``); on the default branch it evaluates
  (mode ``report``) and publishes its results as the ``retrieval-gate-out`` artifact;
- ``refresh`` (default branch only) runs no evaluation: it downloads that artifact, checks it (mode
  ``write-baseline``) and pushes the baseline, manifest and audit as one commit (``[skip ci]``;
  the ref update names the old object id, so a concurrent push is refused and merged again) with
  ``RETRIEVAL_GATE_AZURE_WRITE_TOKEN`` from the variable group ``VARIABLE_GROUP``, whose *Branch
  control* check admits only the default branch.
"""

from __future__ import annotations

from retrieval_gate.scaffold.texts import MARKER, quoted

VARIABLE_GROUP = "retrieval-gate-write"


def _expression_text(text: str) -> str:
    """A string literal of Azure Pipelines' expressions: single quotes, a quote doubled."""
    return "'" + text.replace("'", "''") + "'"


def azure_ci(*, image: str, suite: str, branch: str) -> str:
    suite_line = f"      INPUT_SUITE: {quoted(suite)}\n" if suite != "default" else ""
    main = quoted(f"refs/heads/{branch}")
    condition = (f"and(succeeded(), eq(variables['Build.SourceBranch'], {_expression_text(f'refs/heads/{branch}')}), "
                 "ne(variables['Build.Reason'], 'PullRequest'))")
    return f"""\
{MARKER}: the pull-request check (one thread, the JUnit
# file in the Tests tab) and, on a push to {quoted(branch)}, the baseline refresh in a job of its own that
# runs no evaluation. Tokens (docs/ci.md, "Azure DevOps", says what each can reach):
# - $(System.AccessToken), mapped into the retrieval step alone: give the project's build service
#   "Contribute to pull requests" on this repository and deny it "Contribute" (it posts the
#   thread; it must not push);
# - RETRIEVAL_GATE_AZURE_WRITE_TOKEN: a secret in the variable group {VARIABLE_GROUP} (a PAT with
#   Code: Read & write), whose Branch control check admits only {main}.
trigger:
  branches:
    include: [{quoted(branch)}]
pr:
  branches:
    include: ["*"]

jobs:
  - job: retrieval
    pool:
      vmImage: ubuntu-latest
    container: {quoted(image)}
    steps:
      - checkout: self
      - task: Cache@2
        inputs:
          key: '"retrieval-gate-store" | "$(Agent.OS)"'
          path: .retrieval-gate
      - script: retrieval-gate action
        displayName: retrieval-gate
        env:
          SYSTEM_ACCESSTOKEN: $(System.AccessToken)
          INPUT_AUDIT: "true"
{suite_line.replace("      ", "          ", 1)}          ${{{{ if ne(variables['Build.Reason'], 'PullRequest') }}}}:
            INPUT_MODE: report
      - task: PublishTestResults@2
        condition: always()
        inputs:
          testResultsFormat: JUnit
          testResultsFiles: retrieval-gate-out/junit.xml
          testRunTitle: retrieval-gate
          failTaskOnFailedTests: false
      - publish: retrieval-gate-out
        artifact: retrieval-gate-out
        condition: always()

  - job: refresh
    dependsOn: retrieval
    condition: {quoted(condition)}
    pool:
      vmImage: ubuntu-latest
    container: {quoted(image)}
    variables:
      - group: {VARIABLE_GROUP}
    steps:
      - checkout: self
      - task: DownloadPipelineArtifact@2
        inputs:
          artifact: retrieval-gate-out
          path: $(Build.SourcesDirectory)/retrieval-gate-in
      - script: retrieval-gate action
        displayName: "retrieval-gate: the refresh"
        env:
          RETRIEVAL_GATE_AZURE_WRITE_TOKEN: $(RETRIEVAL_GATE_AZURE_WRITE_TOKEN)
          INPUT_MODE: write-baseline
          INPUT_RESULTS_FILE: retrieval-gate-in/results.json
          INPUT_AUDIT: "true"
{suite_line.replace("      ", "          ", 1)}      - task: PublishTestResults@2
        condition: always()
        inputs:
          testResultsFormat: JUnit
          testResultsFiles: retrieval-gate-out/junit.xml
          testRunTitle: retrieval-gate (refreshed baseline)
"""


def pipeline_text(*, image: str, suite: str, kb: str, kb_is_file: bool, branch: str) -> str:
    """The whole file (the KB's place changes nothing in it)."""
    return azure_ci(image=image, suite=suite, branch=branch)

from __future__ import annotations

from aws_cdk.assertions import Match, Template


def _methods(template: Template) -> dict[str, dict]:
    return template.find_resources("AWS::ApiGateway::Method")


def test_every_method_requires_iam_auth_except_health(template: Template):
    methods = _methods(template)
    by_auth: dict[str, list[str]] = {}
    for logical_id, method in methods.items():
        by_auth.setdefault(method["Properties"]["AuthorizationType"], []).append(logical_id)
    assert len(by_auth["NONE"]) == 1 and "health" in by_auth["NONE"][0].lower()
    assert set(by_auth) == {"NONE", "AWS_IAM"}
    assert len(by_auth["AWS_IAM"]) == 2  # ANY / and ANY /{proxy+}
    # only GET: /health is a resource of its own, so API Gateway answers any other method
    # there 403 "Missing Authentication Token" instead of falling back to the proxy
    health = methods[by_auth["NONE"][0]]["Properties"]
    assert health["HttpMethod"] == "GET"
    on_health = [
        m for m in methods.values() if m["Properties"]["ResourceId"] == health["ResourceId"]
    ]
    assert len(on_health) == 1
    assert {m["Properties"]["HttpMethod"] for m in methods.values()} == {"GET", "ANY"}


def test_stage_logs_access_traces_and_throttles(template: Template):
    template.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": "v1",
            "TracingEnabled": True,
            "AccessLogSetting": {"DestinationArn": Match.any_value(), "Format": Match.any_value()},
            "MethodSettings": Match.array_with(
                [Match.object_like({"ThrottlingRateLimit": 50, "ThrottlingBurstLimit": 100})]
            ),
        },
    )


def test_api_function_logs_in_as_its_role_with_iam_and_runs_in_the_vpc(template: Template):
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": "gpudev-api"}}}},
    )
    ((_, api),) = functions.items()
    assert api["Properties"]["Handler"] == "handler.handler"
    assert api["Properties"]["MemorySize"] == 1024
    variables = api["Properties"]["Environment"]["Variables"]
    assert variables["DB_IAM_USER"] == "gpudev_api_login"
    assert "DB_HOST" in variables and "DB_SECRET_ARN" not in variables
    assert (variables["DB_STATEMENT_TIMEOUT_MS"], variables["DB_LOCK_TIMEOUT_MS"]) == (
        "10000",
        "3000",
    )
    assert "VpcConfig" in api["Properties"]


def test_jobs_queue_has_a_dead_letter_queue_after_three_receives_and_the_api_can_send(
    template: Template,
):
    queues = template.find_resources("AWS::SQS::Queue")
    jobs = next(q for q in queues.values() if q["Properties"]["QueueName"] == "gpudev-jobs")
    assert jobs["Properties"]["RedrivePolicy"]["maxReceiveCount"] == 16
    assert jobs["Properties"]["SqsManagedSseEnabled"] is True
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": "gpudev-api"}}}},
    )
    ((_, api),) = functions.items()
    assert "JOBS_QUEUE_URL" in api["Properties"]["Environment"]["Variables"]
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": Match.array_with(["sqs:SendMessage"]),
                                "Effect": "Allow",
                                "Resource": {"Fn::GetAtt": [Match.any_value(), "Arn"]},
                            }
                        )
                    ]
                )
            }
        },
    )

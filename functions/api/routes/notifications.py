"""The caller's notification contacts and preferences (gpudev/notifications/service.py;
docs/notifications.md). The webhook URL is taken, never given back: answers show it masked."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.notifications.schemas import NotificationSettings, NotificationSettingsUpdate
from routes.answers import answers
from routes.caller import ForCaller

router = Router()


@router.get(
    "/v1/me/notifications",
    responses=answers(200, NotificationSettings, "the caller's contacts (webhook masked)"),
)
def my_notifications(caller: ForCaller) -> NotificationSettings:
    from gpudev.notifications.runtime import ses_email
    from gpudev.notifications.service import notification_settings

    return caller.read(notification_settings, ses_email())


@router.put(
    "/v1/me/notifications",
    responses=answers(
        200, NotificationSettings, "saved: the caller's contacts (webhook masked)", body=True
    ),
)
def change_my_notifications(
    request: NotificationSettingsUpdate, caller: ForCaller
) -> NotificationSettings:
    from gpudev.notifications.runtime import contact_services
    from gpudev.notifications.service import change_notification_settings

    return caller.read(change_notification_settings, request, contact_services())
